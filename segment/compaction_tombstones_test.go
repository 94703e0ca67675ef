package segment

import (
	"testing"
	"time"
)

// TestCompactRemovesAnIdleLogsTombstones: on a log no longer written, a
// tombstone an earlier pass kept is removed by a pass once it is past
// DeleteRetention, with nothing dirty (also after a reopen); until then,
// and after it, a pass does nothing.
func TestCompactRemovesAnIdleLogsTombstones(t *testing.T) {
	fs := NewMemFS()
	opts := compactOpts(fs)
	l := mustOpen(t, "/p", opts)
	m := &compactModel{recs: map[int64]keyed{}}
	tombstoneLog(t, l, m, 1000)
	const retention = time.Minute
	pass := func(l *Log, now int64) CompactResult {
		t.Helper()
		res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), DeleteRetention: retention, MinDirtyRatio: 0.5, Now: time.UnixMilli(now)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tombstone := func(l *Log) bool {
		r, ok := visible(t, l)[1]
		return ok && r.value == nil
	}
	checkpoint := func() (int64, bool) {
		t.Helper()
		ts, ok, err := readOffsetCheckpoint(fs, "/p/"+cleanerTombstoneFile)
		if err != nil {
			t.Fatal(err)
		}
		return ts, ok
	}
	// The pass that first sees the tombstone keeps it and notes its time.
	if res := pass(l, 2000); !res.Ran || res.TombstonesDue || res.TombstonesRemoved != 0 || !tombstone(l) {
		t.Fatalf("first pass: %+v, tombstone there: %v", res, tombstone(l))
	}
	if ts, ok := checkpoint(); !ok || ts != 1000 {
		t.Fatalf("tombstone checkpoint %d (present %v), want 1000", ts, ok)
	}
	// Nothing dirty, the tombstone not yet due: no pass.
	expires := 1000 + retention.Milliseconds()
	if res := pass(l, expires); res.Ran {
		t.Fatalf("pass at exactly DeleteRetention: %+v", res)
	}
	// It survives a reopen.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", opts)
	defer l.Close()
	if res := pass(l, expires+1); !res.Ran || !res.TombstonesDue || res.TombstonesRemoved != 1 || tombstone(l) {
		t.Fatalf("pass past DeleteRetention: %+v, tombstone there: %v", res, tombstone(l))
	}
	checkCompaction(t, l, m, l.active().base, false, true)
	if ts, ok := checkpoint(); ok {
		t.Fatalf("tombstone checkpoint %d left with no tombstone", ts)
	}
	if res := pass(l, expires+time.Hour.Milliseconds()); res.Ran {
		t.Fatalf("pass with nothing dirty and no tombstone: %+v", res)
	}
}
