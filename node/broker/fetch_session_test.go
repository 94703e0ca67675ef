package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

// A follower that keeps its connection alive but stops reading its fetch
// session must not hold the leader's session handler (and the segment views
// of its answer) forever: once it accepts nothing for the leader's
// IdleTimeout, the leader abandons the session (our side sees it end) and
// keeps serving.
func TestLeaderAbandonsFetchSessionTheFollowerDoesNotRead(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, segBytes: 32 << 20, idleTimeout: time.Second})
	// Replica 9 is played by this test.
	c.createPartition("payments", 0, []int32{1, 9}, 1, 1)
	value := strings.Repeat("x", 1<<20)
	for range 8 { // an answer far above a stream's receive window (4 MiB)
		if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{value})); r.Err != wire.None {
			t.Fatalf("produce: %+v", r)
		}
	}
	ctx := context.Background()
	leader := c.node(1)
	s, err := c.client.OpenSession(ctx, leader.addr, wire.TypeReplicaFetch, wire.ReplicaFetchOpen{FollowerID: 9, Incarnation: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	req := wire.ReplicaFetchRequest{MaxBytes: 16 << 20, Parts: []wire.ReplicaFetchPartition{{Topic: "payments",
		TopicID: "id-payments", Partition: 0, FetchOffset: 0, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1, HighWatermark: -1}}}
	if err := s.Send(ctx, wire.TypeReplicaFetch, req); err != nil {
		t.Fatal(err)
	}
	// Never read: the leader's Send stalls on flow control.
	select {
	case <-s.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("the leader still held a fetch session its follower does not read after 15s")
	}
	if n := leader.b.counters.replicaFetchResponses.Load(); n != 0 {
		t.Fatalf("the leader counted %d answers delivered", n)
	}
	// The leader still answers. The test's connection may have been lost
	// meanwhile (a 1 s idle timeout on a loaded machine: a stateless reset),
	// so a failed call is tried again on a new one until the deadline.
	waitFor(t, "the leader answers a produce after the abandoned session", 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r, err := c.produce(ctx, testKey, wire.AcksLeader, buildBatch(-1, -1, []string{"after"}))
		if err == nil && r.Err != wire.None {
			t.Fatalf("produce after the abandoned session: %+v", r)
		}
		if err != nil {
			t.Logf("produce after the abandoned session: %v (trying again)", err)
		}
		return err == nil
	})
}
