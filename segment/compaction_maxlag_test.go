package segment

import (
	"math/rand/v2"
	"testing"
	"time"
)

// max.compaction.lag.ms: a log whose dirty part is below MinDirtyRatio is
// not cleaned until its dirty records are older than MaxLag, and then is
// (Overdue), whatever the ratio.
func TestCompactMaxLag(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	// Everything written at t = 1 h (the age of the segment's first batch
	// is what counts: it bounds its records'); a pass cleans it all.
	const written = 3600_000
	randomLoad(t, l, m, rand.New(rand.NewPCG(9, 9)), 300, 10, CodecNone, written)
	if res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(written + 1000)}); err != nil || !res.Ran || res.Overdue {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	// A little more: a low dirty ratio.
	randomLoad(t, l, m, rand.New(rand.NewPCG(9, 10)), 10, 10, CodecNone, written)
	fillAndRoll(t, l, m, written)
	o := CompactOptions{Below: l.LogEndOffset(), MinDirtyRatio: 0.99, MaxLag: time.Hour}
	for _, c := range []struct {
		now     int64
		overdue bool
	}{
		{written + 1000, false},       // a second old
		{written + 3600_000, false},   // exactly MaxLag old: not older
		{written + 3600_001, true},    // older than MaxLag
		{written + 10*3600_000, true}, // long overdue
	} {
		o.Now = time.UnixMilli(c.now)
		if c.overdue {
			res, err := l.Compact(ctx, o)
			if err != nil || !res.Ran || !res.Overdue || res.DirtyRatio >= 0.99 || res.Segments == 0 {
				t.Fatalf("at %d ms, overdue: %+v, %v", c.now, res, err)
			}
			checkCompaction(t, l, m, l.active().base, true, true) // DeleteRetention 0: tombstones go
			return
		}
		res, err := l.Compact(ctx, o)
		if err != nil || res.Ran || res.Overdue || res.DirtyRatio == 0 {
			t.Fatalf("at %d ms: %+v, %v", c.now, res, err)
		}
		// Without MaxLag it never runs below the ratio.
		o2 := o
		o2.MaxLag, o2.Now = 0, time.UnixMilli(written+100*3600_000)
		if res, err := l.Compact(ctx, o2); err != nil || res.Ran {
			t.Fatalf("without MaxLag: %+v, %v", res, err)
		}
	}
	t.Fatal("never overdue")
}

// SetRollAge: the active segment is sealed at the first append once it has
// been open that long; negative never; 0 the default (7 days).
func TestSetRollAge(t *testing.T) {
	now := time.Unix(1000, 0)
	opts := compactOpts(NewMemFS())
	opts.SegmentBytes = 1 << 20
	opts.Now = func() time.Time { return now }
	l := mustOpen(t, "/p", opts)
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	add := func(after time.Duration) int {
		t.Helper()
		now = now.Add(after)
		m.appendKeyed(t, l, CodecNone, keyed{key: []byte("k"), value: []byte("v"), ts: now.UnixMilli()})
		return len(l.Segments())
	}
	add(0)
	if n := add(time.Hour); n != 1 {
		t.Fatalf("rolled after an hour with the default age: %d segments", n)
	}
	l.SetRollAge(30 * time.Minute) // the segment opened an hour ago
	if n := add(0); n != 2 {
		t.Fatalf("%d segments; want the old one sealed at the first append", n)
	}
	if n := add(29 * time.Minute); n != 2 {
		t.Fatalf("%d segments after 29 minutes", n)
	}
	if n := add(time.Minute); n != 3 {
		t.Fatalf("%d segments after 30 minutes", n)
	}
	l.SetRollAge(-1)
	if n := add(1000 * time.Hour); n != 3 {
		t.Fatalf("%d segments with rolling by age off", n)
	}
	l.SetRollAge(0)
	if n := add(0); n != 4 {
		t.Fatalf("%d segments back at the 7-day default, the segment open 1000 h", n)
	}
}
