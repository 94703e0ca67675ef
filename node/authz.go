package node

import (
	"fmt"

	"paymentlog/quic"
	"paymentlog/wire"
)

// clusterAuthorizer admits wire.ClusterActionTypes only from node
// certificates (under mutual TLS; the endpoint skips it in dev mode). The
// handlers of requests that name a node (broker id, follower id, raft
// sender) also bind that id to the certificate with quic.Peer.CheckNodeID.
func clusterAuthorizer() quic.Authorizer {
	types := make([]quic.FrameType, len(wire.ClusterActionTypes))
	for i, t := range wire.ClusterActionTypes {
		types[i] = quic.FrameType(t)
	}
	return quic.NodeOnly(types...)
}

// checkOwnCertificate refuses to start a node whose certificate is not a
// node certificate for its own id: its peers would refuse every
// node-to-node request it sends, leaving it registered nowhere and
// replicating nothing.
func checkOwnCertificate(cfg Config) error {
	if err := quic.CheckNodeCertificate(quic.TLSConfig{Dir: cfg.TLSDir, Name: cfg.CertName}, cfg.ID); err != nil {
		return fmt.Errorf("node: --tls-dir/--cert-name: %w", err)
	}
	return nil
}
