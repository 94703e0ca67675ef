package node

import (
	"testing"

	"paymentlog/quic"
	"paymentlog/wire"
)

// TestClusterAuthorizerPolicy pins which frame types need a node
// certificate: every node-to-node type but DescribeReplica (read-only, used
// by checkers with a client certificate).
func TestClusterAuthorizerPolicy(t *testing.T) {
	nodeOnly := map[int]bool{
		wire.TypeReplicaFetch: true, wire.TypeAlterPartition: true, wire.TypeBrokerRegister: true,
		wire.TypeBrokerHeartbeat: true, wire.TypeRaftMessage: true, wire.TypeControlledShutdown: true,
		wire.TypeAllocateProducerIDs: true,
	}
	authz := clusterAuthorizer()
	peers := map[string]quic.Peer{
		"client":    {Name: "client", Authenticated: true, Role: quic.RoleClient},
		"role-less": {Name: "node1", Authenticated: true},
		"node":      {Name: "node1", Authenticated: true, Role: quic.RoleNode, NodeID: 1},
	}
	for name, p := range peers {
		for typ := 0; typ < 256; typ++ {
			err := authz(p, quic.FrameType(typ))
			want := p.Role == quic.RoleNode || !nodeOnly[typ]
			if (err == nil) != want {
				t.Errorf("%s, frame type %d: %v, want allowed=%v", name, typ, err, want)
			}
		}
	}
}
