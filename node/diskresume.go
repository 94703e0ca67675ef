package node

import (
	"fmt"
	"time"

	"paymentlog/segment"
)

// When a node whose disk filled may resume (hysteresis).
//
// Resuming as soon as a little room appears made a nearly full disk flap:
// the node was unfenced, took its followers and its preferred leaderships
// back, its catch-up filled the disk again and it was fenced again, once
// for every few MiB that something freed (measured: 5 fence/unfence cycles
// and a leadership taken back and lost in 30 s, e2e
// TestDiskNearlyFullDoesNotFlap). So a node whose disk filled resumes only
// when all of these hold:
//
//  1. the probe fits (diskfull.go: diskProbeBytes written and fsynced in
//     the data directory), so the file system takes writes again;
//  2. the file system's free space (statfs: blocks available to
//     unprivileged writers) is at least FreePercent of its size
//     (Config.DiskResumeFreePercent, --disk-resume-free-percent, default
//     10: "resume below 90% used"), which is far more than a catch-up of
//     the seconds it was fenced needs on any disk that is not tiny. 0 drops
//     the rule (resume once the probe fits, as before); a file system that
//     cannot report its space (a test's MemFS without capacity) skips it;
//  3. it is not backing off after a relapse (relapse.go): a disk that
//     fills again within relapseWindow of resuming makes the next resume
//     wait at least backoffMin from the moment it filled, doubling at every
//     further relapse up to backoffMax; a node that stays up for
//     relapseWindow starts afresh. So even a rule that let it through too
//     early cannot churn leaderships more often than that.
//
// diskResume is that rule as a pure state machine: the caller passes the
// time and the measured space.
type diskResume struct {
	freePercent int // 0..90

	relapseBackoff           // fillings are the failures, resumes their ends
	notBefore      time.Time // no resume before this
}

// filled records that the disk counts as full from now.
func (r *diskResume) filled(now time.Time) { r.notBefore = now.Add(r.failed(now)) }

// need is the free space the rule asks of a file system of sp.Total bytes.
func (r *diskResume) need(sp segment.Space) int64 {
	return sp.Total / 100 * int64(r.freePercent)
}

// may reports whether the node may resume at now, the probe having fitted,
// with sp the file system's space then (known: whether it could be
// measured); when not, why.
func (r *diskResume) may(now time.Time, sp segment.Space, known bool) (bool, string) {
	if now.Before(r.notBefore) {
		return false, fmt.Sprintf("the disk filled again %v after the node resumed: waiting %v before resuming (until %s)",
			r.notBefore.Add(-r.backoff).Sub(r.lastEnd).Round(time.Second), r.backoff, r.notBefore.UTC().Format(time.TimeOnly))
	}
	if known && r.freePercent > 0 && sp.Avail < r.need(sp) {
		return false, fmt.Sprintf("%d of %d bytes free (%d%%): resuming at %d%% free (--disk-resume-free-percent)",
			sp.Avail, sp.Total, 100*sp.Avail/max(sp.Total, 1), r.freePercent)
	}
	return true, ""
}

// resumed records that the node resumed at now.
func (r *diskResume) resumed(now time.Time) { r.ended(now) }
