package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"paymentlog/internal/loopdisk"
	"paymentlog/wire"
)

// Disk-stall tests: real node processes on small ext4 file systems
// (smallDisk), one of which the test freezes with fsfreeze(8) (FIFREEZE):
// the kernel then blocks every write to it, fsync and msync included,
// until it is thawed — a disk that hangs rather than fails, as a SAN or
// cloud volume does in an outage. The node's process runs on, and
// without stall detection its heartbeats would keep its leaderships.

// freeze freezes the file system (loopdisk's Freeze) and registers a
// thaw for the test's end: a frozen file system left behind would hang
// the unmount and every later test.
func (d *smallDisk) freeze(t *testing.T) {
	t.Helper()
	if err := d.Freeze(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.thaw(t) })
}

// thaw unfreezes the file system; thawing one that is not frozen is a
// no-op.
func (d *smallDisk) thaw(t *testing.T) {
	t.Helper()
	if err := d.Thaw(); err != nil {
		t.Error(err)
	}
}

// requireFreeze skips the test without fsfreeze or on tmpfs disks.
func requireFreeze(t *testing.T) {
	t.Helper()
	if err := loopdisk.FreezeAvailable(); err != nil {
		t.Skip(err)
	}
	if os.Getenv("PAYMENTLOG_E2E_DISK") == "tmpfs" {
		t.Skip("fsfreeze needs a block-device file system; PAYMENTLOG_E2E_DISK=tmpfs")
	}
}

// TestDiskStallLeader: the file system under partition 0's leader (not
// the active controller) freezes while acks=all writes go on (RF 3, min
// ISR 2). Writes resume on another in-sync replica within a few seconds;
// once the file system thaws, the node comes back into the ISR, and every
// acknowledged record is on every replica once, at its offset. The node's
// raft loop has nothing to write and runs on: only stall detection moves
// its leadership.
func TestDiskStallLeader(t *testing.T) { diskStallLeader(t, false) }

// TestDiskStallLeaderAndController: the same with the leader also the
// active controller, whose metadata log stalls as well.
func TestDiskStallLeaderAndController(t *testing.T) { diskStallLeader(t, true) }

func diskStallLeader(t *testing.T, onController bool) {
	requireFreeze(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dc := startDiskFullClusterSized(t, ctx, "ext4", dfDiskMiB)
	pm, ctrl := dc.leaderWhere(ctx, onController)
	victim := pm.Leader
	t.Logf("leader %d (epoch %d), controller %d: freezing the leader's file system", pm.Leader, pm.LeaderEpoch, ctrl)
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes before the disk stalls")
	gaps := dc.watchGaps(ctx)
	dc.disks[victim].freeze(t)
	frozen := time.Now()
	waitFor(ctx, t, 20*time.Second, "another leader with the leader's disk stalled", func() (bool, string) {
		pm, _, err := dc.partition(ctx)
		if err != nil {
			return false, err.Error()
		}
		return pm.Leader != victim && pm.Leader >= 0, fmt.Sprintf("leader %d epoch %d isr %v", pm.Leader, pm.LeaderEpoch, pm.ISR)
	})
	dc.waitAcks(ctx, 1000, 20*time.Second, "writes with the old leader's disk stalled")
	gap, end := gaps()
	t.Logf("longest pause of acknowledgements after the freeze: %v, ended %v after it", gap.Round(time.Millisecond), end.Sub(frozen).Round(time.Millisecond))
	dc.waitISR(ctx, victim, false, 20*time.Second) // and not back while its disk is stalled
	dc.noCrashes()
	dc.disks[victim].thaw(t)
	dc.waitISR(ctx, victim, true, 30*time.Second)
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after the disk came back")
	stop()
	dc.waitInSync(ctx, 30*time.Second)
	dc.noCrashes()
	dc.checkReplicas()
	dc.logNotable(victim)
}

// leaderWhere returns partition 0's metadata once its leader is (or is
// not) the active controller, moving the leadership by a reassignment
// that puts another replica first (the controller hands it to the new
// preferred replica once it is in sync) when it is not so already.
func (dc *dfCluster) leaderWhere(ctx context.Context, onController bool) (wire.PartitionMetadata, int32) {
	dc.t.Helper()
	var pm wire.PartitionMetadata
	var ctrl int32
	moved := false
	waitFor(ctx, dc.t, 30*time.Second, fmt.Sprintf("partition 0's leader on the controller: %v", onController), func() (bool, string) {
		var err error
		pm, ctrl, err = dc.partition(ctx)
		if err != nil {
			return false, err.Error()
		}
		if pm.Leader >= 0 && ctrl >= 0 && (pm.Leader == ctrl) == onController {
			return true, ""
		}
		if !moved && pm.Leader >= 0 && ctrl >= 0 {
			want := ctrl
			if !onController {
				want = follower(pm, ctrl)
			}
			order := []int32{want}
			for _, id := range pm.Replicas {
				if id != want {
					order = append(order, id)
				}
			}
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			err := dc.cl.Admin().ReassignPartition(rctx, dfTopic, 0, order)
			cancel()
			if err != nil {
				return false, fmt.Sprintf("reassigning to %v: %v", order, err)
			}
			moved = true
		}
		return false, fmt.Sprintf("leader %d, controller %d, replicas %v", pm.Leader, ctrl, pm.Replicas)
	})
	return pm, ctrl
}

// watchGaps samples the acknowledged count every millisecond from now on;
// the function it returns stops the sampling and gives the longest time
// without a new acknowledgement and when that pause ended.
func (dc *dfCluster) watchGaps(ctx context.Context) func() (time.Duration, time.Time) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var longest time.Duration
	var endedAt time.Time
	go func() {
		defer close(done)
		last, n := time.Now(), dc.ackedCount()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				if m := dc.ackedCount(); m != n {
					if gap := now.Sub(last); gap > longest {
						longest, endedAt = gap, now
					}
					last, n = now, m
				}
			}
		}
	}()
	return func() (time.Duration, time.Time) {
		cancel()
		<-done
		return longest, endedAt
	}
}
