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
	// (Tombstones are not due: TestCompactRemovesAnIdleLogsTombstones.)
	o := CompactOptions{Below: l.LogEndOffset(), MinDirtyRatio: 0.99, MaxLag: time.Hour, DeleteRetention: 1000 * time.Hour}
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
			checkCompaction(t, l, m, l.active().base, true, false)
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

// RollIfDue seals the active segment of a log no longer written once it
// has been open for the roll age, and nothing else: not an empty one, not
// a younger one, not with rolling by age off; the log then takes appends
// and reopens as before.
func TestRollIfDue(t *testing.T) {
	now := time.Unix(1000, 0)
	opts := compactOpts(NewMemFS())
	opts.SegmentBytes, opts.RollAge = 1<<20, time.Hour
	opts.Now = func() time.Time { return now }
	l := mustOpen(t, "/p", opts)
	roll := func(after time.Duration) (bool, int) {
		t.Helper()
		now = now.Add(after)
		rolled, err := l.RollIfDue()
		if err != nil {
			t.Fatal(err)
		}
		return rolled, len(l.Segments())
	}
	if rolled, n := roll(2 * time.Hour); rolled || n != 1 {
		t.Fatalf("rolled an empty active segment: %v, %d segments", rolled, n)
	}
	m := &compactModel{recs: map[int64]keyed{}}
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("k"), value: []byte("v1"), ts: now.UnixMilli()})
	if rolled, n := roll(59 * time.Minute); rolled || n != 1 {
		t.Fatalf("rolled after 59 minutes: %v, %d segments", rolled, n)
	}
	if rolled, n := roll(time.Minute); !rolled || n != 2 {
		t.Fatalf("not rolled after an hour: %v, %d segments", rolled, n)
	}
	if rolled, n := roll(10 * time.Hour); rolled || n != 2 {
		t.Fatalf("rolled the new, empty active segment: %v, %d segments", rolled, n)
	}
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("k"), value: []byte("v2"), ts: now.UnixMilli()})
	l.SetRollAge(-1)
	if rolled, n := roll(100 * time.Hour); rolled || n != 2 {
		t.Fatalf("rolled with rolling by age off: %v, %d segments", rolled, n)
	}
	// The sealed segment is durable and below the active one: a pass may
	// clean it.
	res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: now})
	if err != nil || res.CleanedTo != 1 {
		t.Fatalf("pass after the roll: %+v, %v", res, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", opts)
	defer l.Close()
	checkCompaction(t, l, m, 1, true, false)
}
