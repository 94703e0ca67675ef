package broker

import (
	"slices"
	"testing"
	"time"

	"paymentlog/wire"
)

// A leader does not propose a caught-up follower for the ISR while its
// metadata does not show that broker live with the incarnation the fetches
// come from (SetEligibleBrokers), and proposes it as soon as the metadata
// does: SetEligibleBrokers ticks the partitions before it returns, with no
// wait for the next tick (every 250 ms) or the follower's next fetch (its
// long poll lasts 10 s here).
func TestLeaderProposesOnlyEligibleFollowers(t *testing.T) {
	c := newTestCluster(t, clusterOptions{lagTime: 40 * time.Second, maxWait: 10 * time.Second})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	c.setISR(testKey, 1, 2)
	leader := c.node(1).b
	inc := func(id int32) int64 { return c.node(id).b.cfg.Incarnation }
	// Node 3's registration is not unfenced yet in the leader's metadata.
	leader.SetEligibleBrokers(map[int32]int64{1: inc(1), 2: inc(2)})
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a", "b"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	p := leader.partition("payments", 0)
	caughtUp := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.mu.r.FollowerLEO(3) == p.mu.r.HW() && p.mu.r.HW() == 2
	}
	waitFor(t, "follower 3 caught up on the leader", 10*time.Second, caughtUp)
	p.mu.Lock()
	pending, isr := p.mu.r.PendingISR(), p.mu.r.ISR()
	p.mu.Unlock()
	if pending != nil || !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("follower 3, not live in the leader's metadata, proposed: pending %v, ISR %v", pending, isr)
	}
	// Unfenced: proposed at once.
	leader.SetEligibleBrokers(map[int32]int64{1: inc(1), 2: inc(2), 3: inc(3)})
	p.mu.Lock()
	pending, isr = p.mu.r.PendingISR(), p.mu.r.ISR()
	p.mu.Unlock()
	if !slices.Contains(pending, 3) && !slices.Contains(isr, 3) {
		t.Fatalf("follower 3 live, not proposed: pending %v, ISR %v", pending, isr)
	}
	waitFor(t, "follower 3 back in the ISR", 10*time.Second, func() bool { return slices.Contains(c.state(testKey).ISR, 3) })
}
