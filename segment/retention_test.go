package segment

import (
	"testing"
	"time"
)

// TestDeleteRetainedBelow: a retention pass deletes the oldest sealed
// segments past its size or age limit, stops at the first segment reaching
// Below (a partition's high watermark), never deletes the active segment,
// and a reopened log starts where the pass left it.
func TestDeleteRetainedBelow(t *testing.T) {
	fs := NewMemFS()
	now := time.UnixMilli(10_000_000)
	opts := Options{FS: fs, MaxIndexBytes: 1024, SegmentBytes: 1 << 16, RollAge: time.Minute,
		Now: func() time.Time { return now }, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	for i := 0; i < 5; i++ { // one batch per segment: offsets 0..4, segments 0..4 (4 active)
		mustAppend(t, l, testBatch(i, 1, now.UnixMilli()), 1)
		now = now.Add(2 * time.Minute)
	}
	if segs := l.Segments(); len(segs) != 5 {
		t.Fatalf("segments %v", segs)
	}
	// Every segment is past the age limit, but only those below offset 2 go.
	n, start, err := l.DeleteRetained(ctx, Retention{Bytes: -1, Age: time.Minute, Now: now, Below: 2})
	if err != nil || n != 2 || start != 2 || l.LogStartOffset() != 2 {
		t.Fatalf("deleted %d, start %d (log %d), %v; want 2, 2", n, start, l.LogStartOffset(), err)
	}
	// No limit: nothing goes.
	if n, _, err := l.DeleteRetained(ctx, Retention{Bytes: -1, Age: -1, Now: now, Below: 5}); err != nil || n != 0 {
		t.Fatalf("no limit deleted %d, %v", n, err)
	}
	// Young segments are kept by age; size 0 deletes every sealed one but
	// never the active segment.
	if n, _, err := l.DeleteRetained(ctx, Retention{Bytes: -1, Age: time.Hour, Now: now, Below: 5}); err != nil || n != 0 {
		t.Fatalf("young segments: deleted %d, %v", n, err)
	}
	if n, start, err := l.DeleteRetained(ctx, Retention{Bytes: 0, Age: -1, Now: now, Below: 1 << 40}); err != nil || n != 2 || start != 4 {
		t.Fatalf("size 0: deleted %d, start %d, %v; want 2, 4", n, start, err)
	}
	if segs := l.Segments(); len(segs) != 1 || segs[0] != 4 {
		t.Fatalf("segments after retention %v, want the active one only", segs)
	}
	if err := l.WaitDurable(ctx, l.LogEndOffset()); err != nil {
		t.Fatal(err)
	}
	l.crashForTest()
	l2, err := Open(ctx, "/log", Options{FS: fs.CrashClone(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.LogStartOffset() != 4 || l2.LogEndOffset() != 5 {
		t.Fatalf("reopened log [%d, %d), want [4, 5)", l2.LogStartOffset(), l2.LogEndOffset())
	}
}

// TestDeleteRetainedBySize: size retention keeps the newest segments whose
// total stays within the limit.
func TestDeleteRetainedBySize(t *testing.T) {
	fs := NewMemFS()
	now := time.UnixMilli(10_000_000)
	l := mustOpen(t, "/log", Options{FS: fs, MaxIndexBytes: 1024, SegmentBytes: 1 << 16, RollAge: time.Minute,
		Now: func() time.Time { return now }, Logger: quietLogger})
	defer l.Close()
	for i := 0; i < 6; i++ {
		mustAppend(t, l, testBatch(i, 1, now.UnixMilli()), 1)
		now = now.Add(2 * time.Minute)
	}
	size := int64(len(testBatch(0, 1, now.UnixMilli()))) // every segment holds one batch of this size
	// Keep at most 3 segments' worth: 3 of the 6 go.
	n, start, err := l.DeleteRetained(ctx, Retention{Bytes: 3 * size, Age: -1, Now: now, Below: l.LogEndOffset()})
	if err != nil || n != 3 || start != 3 {
		t.Fatalf("deleted %d, start %d, %v; want 3, 3", n, start, err)
	}
}

// TestRollExpired: the active segment of a log no longer written is
// sealed once retention by age would delete it, and then deleted, leaving
// an empty log starting at its end that takes appends and reopens so; not
// while it holds a record younger than the limit, or one at or above
// Below, or with no age limit.
func TestRollExpired(t *testing.T) {
	fs := NewMemFS()
	now := time.UnixMilli(10_000_000)
	opts := Options{FS: fs, SegmentBytes: 1 << 16, Now: func() time.Time { return now }, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	mustAppend(t, l, testBatch(0, 2, now.UnixMilli()), 1)
	mustAppend(t, l, testBatch(2, 1, now.Add(time.Minute).UnixMilli()), 1)
	roll := func(r Retention) bool {
		t.Helper()
		rolled, err := l.RollExpired(r)
		if err != nil {
			t.Fatal(err)
		}
		return rolled
	}
	hour := Retention{Bytes: -1, Age: time.Hour, Below: 3}
	for _, c := range []struct {
		what string
		r    Retention
	}{
		{"its newest record an hour old", Retention{Bytes: -1, Age: time.Hour, Now: now.Add(61 * time.Minute), Below: 3}},
		{"no age limit", Retention{Bytes: 0, Age: -1, Now: now.Add(100 * time.Hour), Below: 3}},
		{"a record at Below", Retention{Bytes: -1, Age: time.Hour, Now: now.Add(100 * time.Hour), Below: 2}},
	} {
		if roll(c.r) || len(l.Segments()) != 1 {
			t.Fatalf("%s: rolled, %v", c.what, l.Segments())
		}
	}
	hour.Now = now.Add(61*time.Minute + time.Millisecond)
	if !roll(hour) || len(l.Segments()) != 2 {
		t.Fatalf("not rolled past the limit: %v", l.Segments())
	}
	if roll(hour) {
		t.Fatal("rolled the new, empty active segment")
	}
	if n, start, err := l.DeleteRetained(ctx, hour); err != nil || n != 1 || start != 3 {
		t.Fatalf("deleted %d, start %d, %v; want 1, 3", n, start, err)
	}
	if got := l.LogStartOffset(); got != 3 || l.LogEndOffset() != 3 {
		t.Fatalf("log [%d, %d), want [3, 3)", got, l.LogEndOffset())
	}
	if info := mustAppend(t, l, testBatch(3, 1, now.UnixMilli()), 1); info.BaseOffset != 3 {
		t.Fatalf("next append at %d, want 3", info.BaseOffset)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if l.LogStartOffset() != 3 || l.LogEndOffset() != 4 {
		t.Fatalf("reopened log [%d, %d), want [3, 4)", l.LogStartOffset(), l.LogEndOffset())
	}
}
