package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/segment"
)

// Two ApplyPartition calls at once: t-0 becomes a follower of node 2 while
// t-1, the only partition on node 2's fetcher, moves to leader node 3. t-0's
// attach finds node 2's fetcher, then (the hook) t-1's detach empties it,
// removes and cancels it, and only then t-0 is added. t-0 must end up on a
// live fetcher, not the canceled one (it would never fetch again).
func TestConcurrentAttachDetachLeavesNoPartitionOnCanceledFetcher(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := New(ctx, Config{NodeID: 1, DataDir: t.TempDir(), Logger: testLogger(t),
		Log: segment.Options{FS: segment.NewMemFS(), SegmentBytes: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	follow := func(partition, leader, epoch int32) PartitionState {
		return PartitionState{Topic: "t", TopicID: "id-t", Partition: partition, Leader: leader,
			LeaderEpoch: epoch, PartitionEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 1}
	}
	if err := b.ApplyPartition(ctx, follow(1, 2, 1)); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	f2 := b.mu.fetchers[2]
	b.mu.Unlock()
	if f2 == nil {
		t.Fatal("no fetcher for leader 2")
	}

	var detachErr error
	fired := false
	hook := func(leader int32, key tp) {
		if fired || key != (tp{"t", 0}) {
			return
		}
		fired = true
		// t-1's leadership moves to node 3: it leaves node 2's fetcher,
		// which is then empty.
		detachErr = b.ApplyPartition(ctx, follow(1, 3, 2))
	}
	b.hooks.beforeFetcherAdd.Store(&hook)
	if err := b.ApplyPartition(ctx, follow(0, 2, 1)); err != nil {
		t.Fatal(err)
	}
	b.hooks.beforeFetcherAdd.Store(nil)
	if !fired {
		t.Fatal("the hook never ran")
	}
	if detachErr != nil {
		t.Fatalf("ApplyPartition(t-1 led by node 3): %v", detachErr)
	}
	if f2.ctx.Err() == nil {
		t.Fatal("the test did not exercise the race: node 2's first fetcher was not canceled")
	}

	b.mu.Lock()
	f := b.mu.fetchers[2]
	b.mu.Unlock()
	if f == nil {
		t.Fatal("t-0 follows node 2 but no fetcher for node 2 is registered")
	}
	if f.ctx.Err() != nil {
		t.Fatal("node 2's registered fetcher is canceled")
	}
	f.mu.Lock()
	_, ok := f.mu.parts[tp{"t", 0}]
	f.mu.Unlock()
	if !ok {
		t.Fatal("t-0 is not on node 2's live fetcher")
	}
	f2.mu.Lock()
	_, stale := f2.mu.parts[tp{"t", 0}]
	f2.mu.Unlock()
	if stale {
		t.Fatal("t-0 is still on the canceled fetcher")
	}
}
