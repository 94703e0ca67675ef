package segment

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// A truncation below the cleaner point (an unclean leader election) lowers
// it first: records written after the cut are dirty to the next pass, so
// a tombstone among them deletes its key's value there instead of being
// removed as if an earlier pass had cleaned past it. Open lowers a point
// past the log end it recovers.
func TestTruncationLowersTheCleanerPoint(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	m := &compactModel{recs: map[int64]keyed{}}
	// Keys "a-*" up to the cut, then only keys "b-*": what the truncation
	// removes supersedes nothing before it (were it so, the first pass
	// would have removed records the cut then leaves without a newer one:
	// what an unclean election costs a compacted topic anyway).
	rng := rand.New(rand.NewPCG(12, 12))
	for i := range 30 {
		m.appendKeyed(t, l, CodecNone, keyed{key: fmt.Appendf(nil, "a-%d", i%4), value: fmt.Appendf(nil, "%d-%x", i, rng.Uint64()), ts: 1000})
	}
	cut := l.LogEndOffset()
	for i := range 120 {
		m.appendKeyed(t, l, CodecNone, keyed{key: fmt.Appendf(nil, "b-%d", i%4), value: fmt.Appendf(nil, "%d-%x", i, rng.Uint64()), ts: 1000})
	}
	o := CompactOptions{Now: time.UnixMilli(2000)} // DeleteRetention 0: old tombstones go
	o.Below = l.LogEndOffset()
	res, err := l.Compact(ctx, o)
	if err != nil || !res.Ran {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	point := func() int64 {
		t.Helper()
		off, ok, err := readOffsetCheckpoint(fs, "/p/"+cleanerPointFile)
		if err != nil || !ok {
			t.Fatalf("cleaner checkpoint: %v (present %v)", err, ok)
		}
		return off
	}
	if p := point(); p <= cut+4 {
		t.Fatalf("cleaner point %d; the test wants it above %d", p, cut+4)
	}
	end, err := l.TruncateTo(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	if p := point(); p > end {
		t.Fatalf("cleaner point %d after a truncation to %d", p, end)
	}
	for off := range m.recs {
		if off >= end {
			delete(m.recs, off)
		}
	}
	m.leo = end
	// After the cut: a card's number, its tombstone, and enough to seal them.
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("card-9"), value: []byte("4111 1111 1111 1111"), ts: 1000})
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("card-9"), ts: 1000})
	fillAndRoll(t, l, m, 1000)
	o.Below = l.LogEndOffset()
	if _, err := l.Compact(ctx, o); err != nil {
		t.Fatal(err)
	}
	got := checkCompaction(t, l, m, l.active().base, true, true)
	if _, ok := got[end]; ok {
		t.Fatalf("card-9's number at %d is back after its tombstone", end)
	}
	// Open lowers a point past the log end (as a deep recovery cut would
	// leave it).
	leo := l.LogEndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := writeOffsetCheckpoint(fs, "/p/"+cleanerPointFile, leo+100); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	if p := point(); p != leo {
		t.Fatalf("cleaner point %d after Open, want the log end %d", p, leo)
	}
}
