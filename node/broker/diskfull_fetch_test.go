package broker

import (
	"testing"
	"time"

	"paymentlog/wire"
)

// While the node's disk counts as full, its followers fetch only what leaves
// diskFullHeadroom free: what retention or the released disk reserve frees
// stays for retention and the probe, not for copied records. Once the disk
// has room they fetch in full again and catch up.
func TestFollowerFetchPausedWhileDiskFull(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, lagTime: time.Minute, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)
	b := c.node(2).b
	b.mu.Lock()
	f := b.mu.fetchers[1]
	b.mu.Unlock()
	if _, targets, _ := f.buildRequest(time.Now()); len(targets) != 1 {
		t.Fatalf("before: %d fetch targets, want 1", len(targets))
	}
	b.SetDiskFull(true)
	fs := c.node(2).fs
	for _, free := range []int64{0, diskFullHeadroom, diskFullHeadroom + 32<<10} {
		fs.SetCapacity(fs.Used() + free)
		now := time.Now()
		if _, targets, retryAt := f.buildRequest(now); len(targets) != 0 || !retryAt.Equal(now.Add(diskFullFetchPause)) {
			t.Fatalf("disk full, %d bytes free: %d fetch targets, retry at %v; want none, retry in %v",
				free, len(targets), retryAt.Sub(now), diskFullFetchPause)
		}
	}
	// Room beyond the headroom: a fetch, for no more than that room.
	fs.SetCapacity(fs.Used() + diskFullHeadroom + 1<<20)
	if req, targets, _ := f.buildRequest(time.Now()); len(targets) != 1 || req.MaxBytes > 1<<20 {
		t.Fatalf("disk full with 1 MiB over the headroom: %d targets, max bytes %d", len(targets), req.MaxBytes)
	}
	fs.SetCapacity(-1)
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"b"})); r.Err != wire.None {
		t.Fatalf("acks=1 produce: %+v", r)
	}
	b.SetDiskFull(false)
	waitInSync(t, c, testKey)
}
