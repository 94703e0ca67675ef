package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/wire"
)

// mustClusterCerts creates a cluster CA with node certificates node1..nodeN
// (for node ids 1..n) and a client certificate "client".
func mustClusterCerts(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	if err := quic.InitCA(dir, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= n; id++ {
		if err := quic.IssueCert(dir, fmt.Sprintf("node%d", id), []string{"127.0.0.1"}, quic.CertOptions{NodeID: int32(id)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := quic.IssueCert(dir, "client", nil, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// mustStartTLSCluster starts n controllers under mutual TLS, each with its
// own node certificate. Sessions and the replica lag time are long: the
// test checks that hostile requests change nothing, and on a loaded machine
// the default 250 ms session (or 2 s lag) lets a stalled process be fenced
// or shrunk for real, which changes the image without any attacker.
func mustStartTLSCluster(t *testing.T, n int, certs string) *testCluster {
	t.Helper()
	return mustStartClusterWith(t, n, func(c *node.Config) {
		c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
		c.SessionTimeout, c.ReplicaLagTime = 10*time.Second, time.Minute
	})
}

func mustEndpoint(t *testing.T, certs, name string) *quic.Endpoint {
	t.Helper()
	ep, err := quic.New(context.Background(), quic.Config{TLS: quic.TLSConfig{Dir: certs, Name: name}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	return ep
}

// raftFrameBody has raftnode's raft frame msgpack layout (from, to, msgs).
type raftFrameBody struct {
	From uint64   `msgpack:"from"`
	To   uint64   `msgpack:"to"`
	Msgs [][]byte `msgpack:"msgs"`
}

// hostile sends, from ep, every node-to-node request as node claimed, each
// one a request the cluster would act on if it came from that node; target
// is the active controller. It fails the test unless every one is refused
// with ErrClusterAuthorizationFailed.
func hostile(ctx context.Context, t *testing.T, tc *testCluster, ep *quic.Endpoint, claimed, target int32) {
	t.Helper()
	img := tc.node(target).Store().Image()
	addr := tc.addrs[target]
	expectRefused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, quic.ErrClusterAuthorizationFailed) {
			t.Fatalf("%s as node %d: %v, want ErrClusterAuthorizationFailed", what, claimed, err)
		}
	}
	victim, _ := img.Broker(claimed)
	p, _ := img.Partition("payments", 0)

	// Shrink the ISR of a partition the claimed node leads (its leader's
	// request, current epochs: the controller would commit it).
	var ap wire.AlterPartitionResponse
	expectRefused("AlterPartition", ep.Call(ctx, addr, wire.TypeAlterPartition, wire.AlterPartitionRequest{
		BrokerID: claimed, Incarnation: victim.Incarnation, Topic: "payments", TopicID: p.TopicID, Partition: 0,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: []int32{claimed},
	}, &ap))
	// Re-register the node at an address nobody listens on (a new
	// incarnation fences it until it catches up).
	var br wire.BrokerRegisterResponse
	expectRefused("BrokerRegister", ep.Call(ctx, addr, wire.TypeBrokerRegister, wire.BrokerRegisterRequest{
		BrokerID: claimed, Addr: "127.0.0.1:9", Incarnation: victim.Incarnation + 1, ControllerEligible: true,
	}, &br))
	// Ask for its controlled shutdown.
	var hb wire.BrokerHeartbeatResponse
	expectRefused("BrokerHeartbeat", ep.Call(ctx, addr, wire.TypeBrokerHeartbeat, wire.BrokerHeartbeatRequest{
		BrokerID: claimed, Incarnation: victim.Incarnation, MetadataOffset: int64(img.Offset()), WantShutdown: true,
	}, &hb))
	var pid wire.AllocateProducerIDsResponse
	expectRefused("AllocateProducerIDs", ep.Call(ctx, addr, wire.TypeAllocateProducerIDs, wire.AllocateProducerIDsRequest{
		BrokerID: claimed, Incarnation: victim.Incarnation,
	}, &pid))

	// Sessions: the refusal arrives as the session's first answer.
	session := func(what string, t0 quic.FrameType, first, next any) {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		s, err := ep.OpenSession(sctx, addr, t0, first)
		if err != nil {
			t.Fatalf("%s: open: %v", what, err)
		}
		defer s.Close()
		if next != nil {
			_ = s.Send(sctx, t0, next) // may fail once the refusal arrived
		}
		_, err = s.Recv(sctx)
		expectRefused(what, err)
	}
	session("raft message", wire.TypeRaftMessage, raftFrameBody{From: uint64(claimed), To: uint64(target)}, nil)
	session("replica fetch", wire.TypeReplicaFetch, wire.ReplicaFetchOpen{FollowerID: claimed, Incarnation: victim.Incarnation},
		wire.ReplicaFetchRequest{MaxWaitMs: 100, MaxBytes: 1 << 20, Parts: []wire.ReplicaFetchPartition{
			{Topic: "payments", TopicID: p.TopicID, Partition: 0, FetchOffset: 0, LastFetchedEpoch: -1, CurrentLeaderEpoch: p.LeaderEpoch}}})
}

// unchanged fails the test if the hostile requests changed the partition or
// the brokers (the image's epochs and registrations only move forward).
func unchanged(t *testing.T, before, after *metadata.Image) {
	t.Helper()
	pb, _ := before.Partition("payments", 0)
	pa, _ := after.Partition("payments", 0)
	if pb.PartitionEpoch != pa.PartitionEpoch || pb.LeaderEpoch != pa.LeaderEpoch || !slices.Equal(pb.ISR, pa.ISR) {
		t.Fatalf("partition changed: %+v -> %+v", pb, pa)
	}
	for _, b := range before.Brokers() {
		a, _ := after.Broker(b.ID)
		if a != b {
			t.Fatalf("broker %d changed: %+v -> %+v", b.ID, b, a)
		}
	}
}

// TestClusterAuthorization: under mutual TLS a client certificate cannot
// send node-to-node requests (AlterPartition, BrokerRegister, heartbeats,
// producer-id blocks, raft messages, replica fetch sessions), and a node's
// certificate cannot send them as another node; nothing changes, and the
// cluster keeps acknowledging and serving records.
func TestClusterAuthorization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	certs := mustClusterCerts(t, 3)
	tc := mustStartTLSCluster(t, 3, certs)
	tc.waitAlive(3)
	c, err := client.New(ctx, client.Config{Bootstrap: tc.bootstrap(), Logger: testLogger(t),
		TLS: quic.TLSConfig{Dir: certs, Name: "client"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	w := newPaymentWriter(t, c, 100)
	w.produce(ctx, 0, 50)
	w.flush(ctx)
	waitFor(t, "full ISR and converged images", 15*time.Second, func() bool {
		p, ok := tc.image().Partition("payments", 0)
		return ok && len(p.ISR) == 3 && tc.activeController() != 0 && tc.converged()
	})
	target := tc.activeController()
	leader, _ := tc.image().Partition("payments", 0)
	// claimed: the partition's leader unless that is the controller we talk
	// to (its requests would count); imposter: the third node.
	claimed, imposter := leader.Leader, int32(0)
	for id := int32(1); id <= 3; id++ {
		if id != target && (claimed == target || id != claimed) {
			if claimed == target {
				claimed = id
			} else {
				imposter = id
			}
		}
	}
	before := tc.node(target).Store().Image()

	t.Run("client certificate", func(t *testing.T) {
		ep := mustEndpoint(t, certs, "client")
		hostile(ctx, t, tc, ep, claimed, target)
		// Refused by frame type, before the body is even decoded.
		for _, typ := range wire.ClusterActionTypes {
			_, err := ep.CallRaw(ctx, tc.addrs[target], quic.FrameType(typ), []byte{0xc1})
			if !errors.Is(err, quic.ErrClusterAuthorizationFailed) {
				t.Fatalf("frame type %d with an undecodable body from a client: %v, want ErrClusterAuthorizationFailed", typ, err)
			}
		}
	})
	t.Run("node certificate as another node", func(t *testing.T) {
		t.Logf("node%d's certificate claims to be node %d towards node %d", imposter, claimed, target)
		hostile(ctx, t, tc, mustEndpoint(t, certs, fmt.Sprintf("node%d", imposter)), claimed, target)
	})

	// The cluster still acknowledges, replicates and serves records.
	w.produce(ctx, 50, 100)
	readBackPayments(ctx, t, c, w.acknowledged(ctx))
	unchanged(t, before, tc.node(target).Store().Image())
}

// TestNodeRefusesNonNodeCertificate: a node started with a certificate that
// is not a node certificate for its own id refuses to start and names the
// command that fixes it.
func TestNodeRefusesNonNodeCertificate(t *testing.T) {
	certs := mustClusterCerts(t, 2)
	for _, name := range []string{"client", "node2"} {
		cfg := node.DefaultConfig()
		cfg.ID, cfg.Addr, cfg.DataDir = 1, freeUDPAddr(t), t.TempDir()
		cfg.Controllers = map[int32]string{1: cfg.Addr}
		cfg.TLSDir, cfg.CertName = certs, name
		cfg.Logger = testLogger(t)
		n, err := node.Start(context.Background(), cfg)
		if err == nil {
			n.Kill()
			t.Fatalf("node 1 started with certificate %s", name)
		}
		// Someone else's certificate is not re-issued: the fix is node 1's own.
		if !strings.Contains(err.Error(), "--name node1 --node-id 1`") || strings.Contains(err.Error(), "--force") {
			t.Fatalf("certificate %s: error %q does not name the fix", name, err)
		}
	}
}
