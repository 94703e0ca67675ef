package e2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDiskNearlyFullDoesNotFlap: the partition leader's disk fills while
// acks=all writes go on, and then something frees a little room now and
// then (3 MiB every 5 s for 30 s, less than the writes need: the state a node whose disk is sized at
// its retention's edge lives in). A node that resumed as soon as 1 MiB
// fitted was unfenced, took its followers and its preferred leadership back,
// filled the disk again with its catch-up and was fenced again, once per
// freed chunk. With the resume rule (node/diskresume.go: free space at least
// --disk-resume-free-percent of the file system) it stays fenced until
// there is real room, and then recovers as before.
func TestDiskNearlyFullDoesNotFlap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// 128 MiB disks: the writes of the whole test (about 1 MB/s) fit on the
	// other two nodes.
	dc := startDiskFullClusterSized(t, ctx, "ext4", 128)
	pm, ctrl, err := dc.partition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := pm.Leader
	t.Logf("leader %d (epoch %d), controller %d: filling the leader's disk", victim, pm.LeaderEpoch, ctrl)
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes before the disk fills")
	disk := dc.disks[victim]
	disk.fill(t)
	waitFor(ctx, t, 15*time.Second, fmt.Sprintf("node %d fenced and out of the ISR", victim), func() (bool, string) {
		v, err := dc.c.Metadata(ctx, dfTopic)
		if err != nil {
			return false, err.Error()
		}
		b, _ := v.Broker(victim)
		pm, _ := v.Partition(dfTopic, 0)
		return b.State == "fenced" && !slices.Contains(pm.ISR, victim) && pm.Leader != victim,
			fmt.Sprintf("state %s leader %d isr %v", b.State, pm.Leader, pm.ISR)
	})
	resumedBefore := dc.countLog(victim, "disk has room again: heartbeating")

	// 30 s of a nearly full disk: watch the victim's fencings (each changes
	// its fenced_at), the partition's leader epochs and the victim's
	// leaderships.
	const window, every, chunk = 30 * time.Second, 5 * time.Second, 3 << 20
	v0, err := dc.c.Metadata(ctx, dfTopic)
	if err != nil {
		t.Fatal(err)
	}
	b0, _ := v0.Broker(victim)
	p0, _ := v0.Partition(dfTopic, 0)
	fencedAt, epoch := b0.FencedAt, p0.LeaderEpoch
	fencings, epochs, led, unfenced := 0, 0, 0, 0
	wasLeader, wasAlive := false, false
	end := time.Now().Add(window)
	nextFree := time.Now()
	for time.Now().Before(end) {
		if !time.Now().Before(nextFree) {
			disk.release(t, chunk)
			nextFree = nextFree.Add(every)
		}
		if v, err := dc.c.Metadata(ctx, dfTopic); err == nil {
			b, _ := v.Broker(victim)
			p, _ := v.Partition(dfTopic, 0)
			if b.FencedAt != fencedAt {
				fencings++
				fencedAt = b.FencedAt
			}
			if alive := b.State == "alive"; alive != wasAlive {
				if alive {
					unfenced++
				}
				wasAlive = alive
			}
			if p.LeaderEpoch > epoch {
				epochs += int(p.LeaderEpoch - epoch)
				epoch = p.LeaderEpoch
			}
			if isLeader := p.Leader == victim; isLeader != wasLeader {
				if isLeader {
					led++
				}
				wasLeader = isLeader
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	resumed := dc.countLog(victim, "disk has room again: heartbeating") - resumedBefore
	t.Logf("in %v with %d MiB freed every %v: node %d resumed heartbeats %d times, was unfenced %d times, fenced %d times, led the partition %d times; leader epoch +%d",
		window, chunk>>20, every, victim, resumed, unfenced, fencings, led, epochs)
	dc.logNotable(victim)
	if resumed > 0 || unfenced > 0 || led > 0 {
		t.Errorf("node %d flapped on a nearly full disk: resumed %d, unfenced %d, took the leadership back %d times (leader epoch +%d)",
			victim, resumed, unfenced, led, epochs)
	}

	// Real room: it recovers as before.
	disk.free(t)
	start := time.Now()
	dc.waitISR(ctx, victim, true, 20*time.Second)
	t.Logf("node %d back in the ISR %v after the disk was freed", victim, time.Since(start).Round(time.Millisecond))
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after space returned")
	stop()
	dc.waitInSync(ctx, 20*time.Second)
	dc.noCrashes()
	dc.checkReplicas()
}

// countLog counts the lines of node id's log that contain s.
func (dc *dfCluster) countLog(id int32, s string) int {
	dc.t.Helper()
	b, err := os.ReadFile(dc.c.Node(id).LogPath)
	if err != nil {
		dc.t.Fatal(err)
	}
	return strings.Count(string(b), s)
}
