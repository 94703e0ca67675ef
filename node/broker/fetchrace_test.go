package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/wire"
)

// produceTo sends one batch to node id as leader of epoch, bypassing the
// fake controller's routing (for zombie leaders).
func produceTo(t *testing.T, c *testCluster, id int32, epoch int32, acks int8, vals ...string) wire.ProducePartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.ProduceResponse
	err := c.client.Call(ctx, c.node(id).addr, wire.TypeProduce, wire.ProduceRequest{Acks: acks, TimeoutMs: 5000,
		Topic: testKey.topic, Parts: []wire.ProducePartition{{Partition: testKey.partition, LeaderEpoch: epoch,
			Batch: buildBatch(-1, -1, vals)}}}, &resp)
	if err != nil {
		t.Fatalf("produce to %d: %v", id, err)
	}
	if r := resp.Parts[0]; r.Err != wire.None {
		t.Fatalf("produce to %d: %+v", id, r)
	}
	return resp.Parts[0]
}

// TestReplicaFetchReadAfterLeadershipLost: the leader checks a follower's
// fetch (epoch, divergence) and then reads the records to send, not
// atomically. In between it loses the leadership, truncates its divergent
// tail and copies the new leader's records to the same offsets. The answer
// must not carry them: the follower, still in the old epoch, would append
// the new leader's records behind its own copy of the old leader's tail,
// and its log would then pass every later epoch check while holding other
// records than the new leader's below them.
func TestReplicaFetchReadAfterLeadershipLost(t *testing.T) {
	// Nodes 1 and 2 are real; replica 3 is played by the test.
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 1)
	produceTo(t, c, 1, 1, wire.AcksLeader, "a")
	waitFor(t, "node 2 has a", 10*time.Second, func() bool {
		_, _, leo, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return leo == 1
	})
	// Node 2 leads epoch 2; node 1 has not heard and writes b, c in epoch
	// 1 (replica 3 copies them); node 2 writes x, y, z, w in epoch 2.
	c.mu.Lock()
	st := c.parts[testKey]
	st.Leader, st.LeaderEpoch, st.PartitionEpoch = 2, 2, 2
	epoch2 := *st
	c.mu.Unlock()
	if err := c.node(2).b.ApplyPartition(c.ctx, epoch2); err != nil {
		t.Fatal(err)
	}
	produceTo(t, c, 1, 1, wire.AcksLeader, "b", "c")
	produceTo(t, c, 2, 2, wire.AcksLeader, "x", "y", "z", "w")

	// Replica 3 (log a b, epoch 1) fetches from node 1 at offset 2.
	// Between the checks and the read node 1 learns of epoch 2, follows
	// node 2, truncates b and c away and copies x y z w.
	n1 := c.node(1)
	hook := func(req *wire.ReplicaFetchPartition) {
		if req.FetchOffset != 2 || req.CurrentLeaderEpoch != 1 {
			return // not replica 3's request
		}
		if err := n1.b.ApplyPartition(c.ctx, epoch2); err != nil {
			t.Error(err)
		}
		waitFor(t, "node 1 holds node 2's log", 10*time.Second, func() bool {
			_, _, leo, _ := n1.b.PartitionInfo(testKey.topic, testKey.partition)
			return leo == 5
		})
	}
	n1.b.hooks.beforeReplicaRead.Store(&hook)
	w := newWaiter()
	resp, views := n1.b.answerReplicaFetch(c.ctx, wire.ReplicaFetchOpen{FollowerID: 3, Incarnation: 1},
		&wire.ReplicaFetchRequest{MaxWaitMs: 0, MaxBytes: 1 << 20, Parts: []wire.ReplicaFetchPartition{{
			Topic: testKey.topic, TopicID: "id-" + testKey.topic, Partition: testKey.partition, FetchOffset: 2, LastFetchedEpoch: 1,
			CurrentLeaderEpoch: 1, HighWatermark: 0}}}, w)
	defer releaseAll(views)
	n1.b.hooks.beforeReplicaRead.Store(nil)
	if got := readAll(t, n1.b.partition(testKey.topic, testKey.partition).log, 5); got[2] != "y" {
		t.Fatalf("the hook did not run as planned: node 1's log %v", got)
	}
	pr := resp.Parts[0]
	if pr.Err == wire.None && len(pr.Records) > 0 {
		t.Fatalf("node 1, no longer leader of epoch 1, answered replica 3's epoch-1 fetch at offset 2 with "+
			"%d bytes of node 2's epoch-2 records: replica 3's log would read a b y z w", len(pr.Records))
	}
	t.Logf("answer: %v", pr.Err)
}
