package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"paymentlog/bench/localcluster"
)

// A failover outlier is rarely reproduced by a rerun, so the evidence is
// kept when it happens: with a local cluster, every trial that took longer
// than FailoverConfig.KeepSlowOver (or failed) gets the lines each node
// logged from just before its kill until the trial ended, copied into
// <base dir>/paymentlog-bench-slow-<time>/<kind>-trial-<n>/nodeN.log, with
// the bench's own debug log of the same span (its clients: retries,
// metadata watches, leader changes) in bench.log. The report and the
// trial's JSON (logs_kept) name the directory.

// trialLogs marks the node logs before one trial's kill. Its zero value
// (no local cluster, or keeping disabled) keeps nothing.
type trialLogs struct {
	lt    *localTarget
	marks localcluster.LogMarks
	at    time.Time
}

// markTrialLogs is called just before a trial's kill.
func (r *runner) markTrialLogs() trialLogs {
	lt, ok := r.target.(*localTarget)
	if !ok || r.cfg.Failover.KeepSlowOver <= 0 {
		return trialLogs{}
	}
	return trialLogs{lt: lt, marks: lt.c.LogMarks(), at: time.Now()}
}

// keepIfSlow copies the trial's node logs when took exceeds the bound or
// failed is set, and returns the directory ("" when nothing was kept).
func (r *runner) keepIfSlow(tl trialLogs, kind string, n int, took time.Duration, failed bool) string {
	if tl.lt == nil || (took <= r.cfg.Failover.KeepSlowOver && !failed) {
		return ""
	}
	if r.slowDir == "" {
		base := r.cfg.BaseDir
		if base == "" {
			base = os.TempDir()
		}
		r.slowDir = filepath.Join(base, "paymentlog-bench-slow-"+time.Now().Format("20060102-150405"))
	}
	dir := filepath.Join(r.slowDir, fmt.Sprintf("%s-trial-%d", kind, n))
	if err := tl.lt.c.CopyLogsSince(tl.marks, dir); err != nil {
		r.log.Warn("could not keep a slow trial's node logs", "dir", dir, "err", err)
		return ""
	}
	if r.ring != nil {
		if err := os.WriteFile(filepath.Join(dir, "bench.log"), r.ring.since(tl.at), 0o644); err != nil {
			r.log.Warn("could not keep a slow trial's bench log", "dir", dir, "err", err)
		}
	}
	return dir
}

// longestMs returns the longest of the times (ms; negative: not measured)
// as a duration.
func longestMs(ms ...float64) time.Duration {
	var d time.Duration
	for _, m := range ms {
		d = max(d, time.Duration(m*float64(time.Millisecond)))
	}
	return d
}
