package segment

import (
	"testing"
)

// writeSegments appends to a fresh log in dir until it has at least three
// segments and closes it cleanly; it returns the index entries of each.
func writeSegments(t *testing.T, fs *MemFS, dir string, opts Options) []int {
	t.Helper()
	l := mustOpen(t, dir, opts)
	for i := 0; len(l.Segments()) < 3; i++ {
		mustAppend(t, l, testBatch(i, 3, int64(i)), 1)
	}
	var entries []int
	for _, s := range l.mu.segs {
		entries = append(entries, s.idx.n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return entries
}

// truncateIndexes keeps the first keep entries of segment base's offset and
// time indexes: a short index that passes every other check (sorted,
// inside the log, both files the same length).
func truncateIndexes(t *testing.T, fs *MemFS, l *Log, base int64, keep int) {
	t.Helper()
	_, idxPath, tidxPath := l.segPaths(base)
	for _, f := range []struct {
		path string
		size int
	}{{idxPath, offsetEntrySize}, {tidxPath, timeEntrySize}} {
		if err := fs.Corrupt(f.path, func(d []byte) []byte { return d[:keep*f.size] }); err != nil {
			t.Fatal(err)
		}
	}
}

// A cleanly closed log whose sealed segment lost entries from the end of its
// index files (both, so that they still agree) rebuilds them when it opens.
// Before, the header walk from the last kept entry accepted the segment, and
// every read past that entry walked the batches from there.
func TestShortIndexOfASealedSegmentIsRebuilt(t *testing.T) {
	for _, keep := range []int{0, 1, 3} {
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 4 << 10, IndexInterval: 256, Logger: quietLogger}
		want := writeSegments(t, fs, "/log", opts)
		if want[0] <= keep {
			t.Fatalf("segment 0 has %d entries, want more than %d", want[0], keep)
		}
		l := &Log{dir: "/log", fs: fs}
		truncateIndexes(t, fs, l, 0, keep)

		l = mustOpen(t, "/log", opts)
		s := l.mu.segs[0]
		if s.idx.n != want[0] || s.tidx.n != want[0] {
			t.Errorf("keep %d: reopened with %d index and %d time index entries, want %d", keep, s.idx.n, s.tidx.n, want[0])
		}
		if l.opened.scanned != s.size {
			t.Errorf("keep %d: scanned %d bytes, want segment 0's %d", keep, l.opened.scanned, s.size)
		}
		if got := readAll(t, l, 0); len(got) == 0 || got[len(got)-1].LastOffset()+1 != l.LogEndOffset() {
			t.Errorf("keep %d: read %d batches", keep, len(got))
		}
		l.Close()
	}
}

// The rule reads the interval from the index's own entries, so opening a
// log with another --index-interval rescans nothing when it is lowered, and
// at most the segment that was active at the change, once, when it is
// raised.
func TestChangedIndexIntervalDoesNotRescanTheLog(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 4 << 10, IndexInterval: 512, Logger: quietLogger}
	writeSegments(t, fs, "/log", opts)

	lowered := opts
	lowered.IndexInterval = 128
	l := mustOpen(t, "/log", lowered)
	if l.opened.scanned != 0 {
		t.Fatalf("lowered interval: scanned %d bytes, want 0", l.opened.scanned)
	}
	// The active segment goes on at the lower interval.
	for i := 0; i < 6; i++ {
		mustAppend(t, l, testBatch(100+i, 3, int64(100+i)), 1)
	}
	l.Close()
	l = mustOpen(t, "/log", opts)
	if l.opened.scanned != 0 {
		t.Fatalf("back at the first interval: scanned %d bytes, want 0", l.opened.scanned)
	}
	// Raised while a segment is active: its tail comes at the higher
	// interval, here longer than the lower one.
	base := l.active().base
	for i := 0; l.active().sinceIndex < int64(3*lowered.IndexInterval); i++ {
		mustAppend(t, l, testBatch(200+i, 3, int64(200+i)), 1)
	}
	if l.active().base != base {
		t.Fatal("the active segment rolled")
	}
	l.Close()
	l = mustOpen(t, "/log", opts)
	active := l.active().size
	if l.opened.scanned == 0 || l.opened.scanned > active {
		t.Fatalf("raised interval: scanned %d bytes, want the active segment's %d (its tail came at the higher interval)", l.opened.scanned, active)
	}
	l.Close()
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if l.opened.scanned != 0 {
		t.Fatalf("opened again: scanned %d bytes, want 0", l.opened.scanned)
	}
}
