package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestDiskStallRelapseHoldsNodeAside: the file system under partition 0's
// leader (not the active controller) freezes twice, seconds apart, while
// acks=all writes go on (RF 3, min ISR 2). After the first thaw the node
// comes back into the ISR as before; after the second (a stall within
// 10 minutes of the previous one's end) it stays out of the ISR for its
// 30 s hold-down (node/diskstall_holddown.go) while the other two take
// the writes, and then rejoins. Every acknowledged record is on every
// replica once, at its offset.
func TestDiskStallRelapseHoldsNodeAside(t *testing.T) {
	requireFreeze(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// 512 MiB disks: a minute of writes (about 2.5 MB/s) fits.
	dc := startDiskFullClusterSized(t, ctx, "ext4", 512)
	pm, ctrl := dc.leaderWhere(ctx, false)
	victim := pm.Leader
	t.Logf("leader %d, controller %d: freezing the leader's file system twice", victim, ctrl)
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes before the disk stalls")

	disk := dc.disks[victim]
	// stall freezes the disk and thaws it; it returns when the node has
	// logged its nth stall, with the time of the thaw.
	stall := func(n int) (thawed time.Time) {
		disk.freeze(t)
		dc.waitISR(ctx, victim, false, 20*time.Second)
		holdFull(ctx, 2*time.Second+stallPastTimeout) // frozen past the stall timeout
		disk.thaw(t)
		thawed = time.Now()
		// Seen when the operation returns at the latest: when a node's every
		// thread blocks on the frozen disk, only the controller fences it,
		// and the node's first look after the thaw finds the stall no look
		// saw (node/diskstall.go).
		dc.waitStalls(ctx, victim, n)
		return thawed
	}
	stall(1)
	dc.waitISR(ctx, victim, true, 30*time.Second) // the first stall: no hold-down
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after the first stall")

	thawed := stall(2) // again, seconds after the first stall's end
	// Out of the ISR for the hold-down (30 s from the stall's end, which is
	// after the thaw), writes going on at the other two.
	for time.Since(thawed) < 25*time.Second {
		pm, _, err := dc.partition(ctx)
		if err == nil && slices.Contains(pm.ISR, victim) {
			t.Fatalf("node %d back in the ISR %v after the second stall (%v after the thaw): no hold-down", victim, pm.ISR, time.Since(thawed).Round(time.Millisecond))
		}
		dc.waitAcks(ctx, 100, 15*time.Second, "writes during the hold-down")
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
	dc.waitISR(ctx, victim, true, 30*time.Second)
	t.Logf("node %d back in the ISR %v after the thaw", victim, time.Since(thawed).Round(time.Millisecond))
	stop()
	dc.waitInSync(ctx, 30*time.Second)
	dc.noCrashes()
	dc.checkReplicas()
	dc.requireLog(victim, "disk stall over, but the disk stalled again soon after the previous stall")
	dc.requireLog(victim, "disk stall hold-down over: heartbeating")
}

// stallPastTimeout is how long a test keeps a disk frozen beyond the
// stall timeout (2 s).
const stallPastTimeout = time.Second

// waitStalls waits until node id has logged n disk stalls (a frozen
// follower may leave the ISR by lag before its stall is detected).
func (dc *dfCluster) waitStalls(ctx context.Context, id int32, n int) {
	dc.t.Helper()
	waitFor(ctx, dc.t, 20*time.Second, fmt.Sprintf("node %d's disk stall %d", id, n), func() (bool, string) {
		c := dc.countLog(id, "disk stalled: holding back broker heartbeats") +
			dc.countLog(id, "disk stalled while this whole process was blocked")
		return c >= n, fmt.Sprintf("%d stalls logged", c)
	})
}
