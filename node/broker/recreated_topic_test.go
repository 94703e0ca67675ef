package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestRecreatedTopicNotServedToOldFollower: a topic deleted and re-created
// under the same name, whose new leader has applied the re-creation while a
// follower's metadata still names the old topic (same leader and epochs, as
// a re-created topic starts over). The follower's fetches for the old topic
// must not be answered from the new one: the answer would truncate the old
// log to the new one's length and the leader would count the follower's
// offsets, on records of the old topic, toward the new topic's HW.
func TestRecreatedTopicNotServedToOldFollower(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, lagTime: time.Minute})
	c.createPartition(testKey.topic, testKey.partition, []int32{1, 2}, 1, 2)
	old := []string{"old-0", "old-1", "old-2", "old-3", "old-4"}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, old)); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}

	// The new topic, told to node 1 only (node 2's metadata lags).
	st := c.recreate(testKey, "id-recreated")
	leader, follower := c.node(1), c.node(2)
	fetchesBefore := leader.b.counters.replicaFetchResponses.Load()
	if err := leader.b.ApplyPartition(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if r := mustProduce(t, c, 1, buildBatch(-1, -1, []string{"new-0", "new-1", "new-2"})); r.Err != wire.None {
		t.Fatalf("produce to the new topic: %+v", r)
	}
	// Several fetch rounds of node 2's session, answered since.
	waitFor(t, "node 2's fetches to be answered", 10*time.Second, func() bool {
		return leader.b.counters.replicaFetchResponses.Load() >= fetchesBefore+5
	})
	if hw, _, _, _ := leader.b.PartitionInfo(testKey.topic, testKey.partition); hw != 0 {
		t.Errorf("new topic's HW %d counts a follower of the old topic", hw)
	}
	fp := follower.b.partition(testKey.topic, testKey.partition)
	got := readAll(t, fp.log, fp.log.LogEndOffset())
	for i, v := range old {
		if got[int64(i)] != v {
			t.Fatalf("old topic's log on node 2 changed by the new topic's leader: %v", got)
		}
	}
	if len(got) != len(old) {
		t.Fatalf("old topic's log on node 2: %v", got)
	}
}
