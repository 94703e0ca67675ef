package segment

import (
	"errors"
	"strings"
	"testing"
)

// A truncation whose removal of a later segment's file fails stops and
// fails the log before it cuts anything else: the file left behind would
// otherwise come back after the cut segment at the next Open, a gap in
// base offsets (Open refuses the log, or with TruncateOnCorruption cuts
// it at the gap).
func TestTruncationStopsWhenARemovalFails(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1024, Sync: SyncAlways, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	for i := 0; l.LogEndOffset() < 200 || len(l.Segments()) < 3; i++ {
		info := mustAppend(t, l, testBatch(i, 4, int64(i)), 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
	}
	segs := l.Segments()
	last := "/log/" + segmentName(segs[len(segs)-1]) + ".log"
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpRemove && path == last {
			return errors.New("injected I/O error")
		}
		return nil
	})
	cut := segs[0] + 2
	if _, err := l.TruncateTo(ctx, cut); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("TruncateTo with a failed removal: %v", err)
	}
	fs.SetFault(nil)
	l.crashForTest()
	l, err := Open(ctx, "/log", Options{FS: fs.CrashClone(), SegmentBytes: 1024, Sync: SyncAlways, Logger: quietLogger})
	if err != nil {
		t.Fatalf("Open after the failed truncation: %v", err)
	}
	defer l.Close()
	if l.LogEndOffset() < cut {
		t.Fatalf("log end %d after a truncation to %d", l.LogEndOffset(), cut)
	}
}
