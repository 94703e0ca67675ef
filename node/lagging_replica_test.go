package node_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/node/broker"
	"paymentlog/wire"
)

// A running node whose metadata lags (it applies the log late: a slow
// disk, a partition from the controllers) must not join a partition's ISR
// on a copy it is about to delete. Here node 4's applying is held while
// payments-0 moves from it to node 5 and back. Node 4 has seen neither
// change and keeps fetching as the follower it was. Had the removal kept
// the leader epoch, the leader would take those fetches once node 4 is a
// replica again, node 4 would catch up and join the ISR, then apply the
// removal it had not seen and delete its copy while it counts as in sync
// (elected then, it would come back empty). The removal bumps the leader
// epoch (metadata settle), so the leader refuses node 4's fetches until it
// has applied both changes, its copy deleted and fetched again by then.
func TestLaggingReplicaGivenBackIsFencedUntilItCatchesUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var (
		armedAt  atomic.Uint64 // 0: not armed; else entries after it are held
		held     = make(chan struct{})
		holdOnce sync.Once
		release  = make(chan struct{})
	)
	// Node 4 is a broker-only node: holding its apply holds no raft voter.
	tc, c := reassignCluster(ctx, t, 5, func(cfg *node.Config) {
		if cfg.ID != 4 {
			return
		}
		node.SetApplyGate(cfg, func(index uint64) {
			if at := armedAt.Load(); at != 0 && index > at {
				holdOnce.Do(func() { close(held) })
				<-release
			}
		})
	}, []int32{1, 2, 4})
	// Registered after the cluster's own cleanup, so it runs first:
	// stopping node 4 waits for its apply, which must not stay held.
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	w := newPaymentWriter(t, c, 200)
	w.produce(ctx, 0, 100)
	w.flush(ctx)
	n1, n4 := tc.node(1), tc.node(4)
	leo4 := func() int64 {
		_, _, end, ok := n4.Broker().PartitionInfo("payments", 0)
		if !ok {
			return -1
		}
		return end
	}
	waitFor(t, "node 4 holds the first 100 records", 15*time.Second, func() bool { return leo4() == 100 })
	armedAt.Store(n4.Store().Image().Offset())

	moveTo := func(replicas []int32) {
		t.Helper()
		if err := c.Admin().ReassignPartition(ctx, "payments", 0, replicas); err != nil {
			t.Fatal(err)
		}
	}
	moveTo([]int32{1, 2, 5})
	waitFor(t, "payments-0 moved to node 5", 20*time.Second, func() bool {
		p, ok := n1.Store().Image().Partition("payments", 0)
		return ok && slices.Equal(p.Replicas, []int32{1, 2, 5}) && len(p.ISR) == 3
	})
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("node 4's applying was never held")
	}
	w.produce(ctx, 100, 200)
	w.flush(ctx)
	moveTo([]int32{1, 2, 4})
	waitFor(t, "the leader gave node 4 its replica back", 20*time.Second, func() bool {
		p, ok := n1.Store().Image().Partition("payments", 0)
		return ok && slices.Contains(p.Replicas, 4)
	})
	fenced := func() uint64 {
		for _, e := range n1.Broker().ErrorCounts() {
			if e.Request == broker.RequestReplicaFetch && e.Code == wire.FencedLeaderEpoch {
				return e.Count
			}
		}
		return 0
	}
	before := fenced()
	var inISR bool
	waitFor(t, "node 4 in the ISR, or a fetch of its refused by the leader", 20*time.Second, func() bool {
		p, _ := n1.Store().Image().Partition("payments", 0)
		inISR = slices.Contains(p.ISR, 4)
		return inISR || fenced() > before
	})
	if inISR {
		t.Fatalf("node 4 joined payments-0's ISR before applying its removal (its image is at %d): "+
			"applying it will delete the copy that counts as in sync", n4.Store().Image().Offset())
	}
	close(release)
	waitFor(t, "node 4 back in the ISR with all 200 records", 30*time.Second, func() bool {
		p, _ := n1.Store().Image().Partition("payments", 0)
		return slices.Contains(p.ISR, 4) && !p.Reassigning() && leo4() == 200
	})
	if got := w.acknowledged(ctx); len(got) != 200 {
		t.Fatalf("%d of 200 records acknowledged", len(got))
	}
}
