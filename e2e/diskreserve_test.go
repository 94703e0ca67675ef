package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestDiskFullRetentionFreesSpace: a follower's disk fills to the last
// block while its topic has time retention (retention.ms 10 s, checked
// every second), and nobody frees anything. A deletion first writes the
// producer snapshot and the log-start checkpoint, which need blocks: on a
// disk with none, retention failed at every pass and the node stayed fenced
// until an operator freed a few KiB. With the disk reserve
// (node/diskreserve.go) the node releases it, retention deletes the expired
// segments, and the node resumes and rejoins the ISR by itself.
func TestDiskFullRetentionFreesSpace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dc := startDiskFullClusterSized(t, ctx, "ext4", dfDiskMiB,
		"--retention-ms", "10000", "--retention-check-interval", "1s", "--disk-resume-free-percent", "5")
	pm, ctrl, err := dc.partition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim := follower(pm, ctrl)
	t.Logf("leader %d, controller %d, filling follower %d", pm.Leader, ctrl, victim)
	stop := dc.producer(ctx)
	defer stop()
	// About 8 MB: several 1 MiB segments for retention to delete.
	dc.waitAcks(ctx, 35000, 30*time.Second, "writes before the disk fills")
	disk := dc.disks[victim]
	disk.fill(t)
	filled := time.Now()
	dc.waitISR(ctx, victim, false, 15*time.Second)
	dc.requireLog(victim, "disk full: holding back broker heartbeats")
	stop()
	t.Logf("writes stopped %v after the disk filled; %d bytes free", time.Since(filled).Round(time.Millisecond), disk.avail(t))

	// Nobody frees anything: retention has to.
	waitFor(ctx, t, 45*time.Second, fmt.Sprintf("node %d back in the ISR without help", victim), func() (bool, string) {
		pm, _, err := dc.partition(ctx)
		if err != nil {
			return false, err.Error()
		}
		return slices.Contains(pm.ISR, victim), fmt.Sprintf("isr %v; %d bytes free on node %d's disk", pm.ISR, disk.avail(t), victim)
	})
	t.Logf("node %d back in the ISR %v after its disk filled; %d bytes free", victim, time.Since(filled).Round(time.Millisecond), disk.avail(t))
	dc.requireLog(victim, "released the disk reserve")
	// Its own retention pass, or following the leader's retention: raising
	// its log start to the leader's, or starting over at it when the leader
	// deleted everything it lacked (a full truncation). Which one runs
	// first on the released room depends on timing (under load, not the
	// first).
	dc.requireLog(victim, "retention deleted segments", "log start raised to the leader's", "fully=true")
	stopAgain := dc.producer(ctx)
	defer stopAgain()
	dc.waitAcks(ctx, 500, 15*time.Second, "writes after the node recovered")
	stopAgain()
	dc.waitInSync(ctx, 20*time.Second)
	dc.noCrashes()
	dc.logNotable(victim)
}
