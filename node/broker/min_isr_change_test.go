package broker

import (
	"testing"
	"time"

	"paymentlog/wire"
)

// TestLoweredMinISRAdvancesHWAtOnce: a min ISR lowered by a config change
// (same epochs, only MinISR differs) lets the leader's HW pass records the
// ISR already holds at once, not at the followers' next fetch (here a
// minute-long long-poll away). Raised, it refuses acks=all produce at once.
func TestLoweredMinISRAdvancesHWAtOnce(t *testing.T) {
	c := newTestCluster(t, clusterOptions{maxWait: time.Minute, lagTime: time.Hour})
	key := tp{"t", 0}
	c.stopNode(3) // a replica outside the ISR, stopped so that it does not rejoin
	c.mu.Lock()
	c.parts[key] = &PartitionState{Topic: "t", TopicID: "id-t", Partition: 0, Leader: 1, LeaderEpoch: 1,
		PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 3}
	c.mu.Unlock()
	c.push(key)
	r, err := c.produce(c.ctx, key, wire.AcksAll, buildBatch(-1, 0, []string{"refused"}))
	if err != nil || r.Err != wire.NotEnoughReplicas {
		t.Fatalf("acks=all with 2 in sync and min ISR 3: %+v %v", r, err)
	}
	if r, err := c.produce(c.ctx, key, wire.AcksLeader, buildBatch(-1, 0, []string{"a"})); err != nil || r.Err != wire.None {
		t.Fatalf("acks=1: %+v %v", r, err)
	}
	waitFor(t, "the follower holds the record", 10*time.Second, func() bool {
		_, _, leo, ok := c.node(2).b.PartitionInfo("t", 0)
		return ok && leo == 1
	})
	if hw, _, _, _ := c.node(1).b.PartitionInfo("t", 0); hw != 0 {
		t.Fatalf("HW %d with 2 in sync and min ISR 3", hw)
	}
	c.mu.Lock()
	c.parts[key].MinISR = 2
	c.mu.Unlock()
	c.push(key)
	waitFor(t, "the leader's HW passes the record", 5*time.Second, func() bool {
		hw, _, _, _ := c.node(1).b.PartitionInfo("t", 0)
		return hw == 1
	})
}
