package segment

import (
	"testing"
)

// A cleanly closed log whose last segment lost its index files (removed by
// hand, or never written) rebuilds them when it opens: the clean-shutdown
// marker vouches for the data, not for indexes that are not there. Without
// them every read in the segment would scan it from its first batch.
func TestMissingIndexesOfTheLastSegmentAreRebuilt(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1 << 20, IndexInterval: 64, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	for i := 0; l.LogEndOffset() < 60; i++ {
		mustAppend(t, l, testBatch(i, 3, int64(i)), 1)
	}
	if n := len(l.Segments()); n != 1 {
		t.Fatalf("%d segments, want 1", n)
	}
	want := l.mu.segs[0].idx.n
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if want == 0 {
		t.Fatal("no index entries to lose")
	}
	_, idxPath, tidxPath := l.segPaths(0)
	for _, p := range []string{idxPath, tidxPath} {
		if err := fs.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	s := l.mu.segs[0]
	if s.idx.n != want || s.tidx.n != want {
		t.Fatalf("reopened with %d index and %d time index entries, want %d", s.idx.n, s.tidx.n, want)
	}
	if got := readAll(t, l, 0); len(got) == 0 || got[len(got)-1].LastOffset() != 59 {
		t.Fatalf("read %d batches", len(got))
	}
}
