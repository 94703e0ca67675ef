package segment

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// Dirtiness agrees with the Compact that follows it, over random loads
// and options: the pass runs exactly when it said Due, at the dirty ratio
// it said, overdue when it said so (and the ratio alone would not have
// run it), and FirstDirtyTimestamp is the first dirty batch's. It refuses
// to look while a pass runs, and after Close.
func TestDirtinessPredictsCompact(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	m := &compactModel{recs: map[int64]keyed{}}
	rng := rand.New(rand.NewPCG(11, 3))
	ratios := []float64{0, 0.1, 0.5, 0.9, 0.99}
	ts := int64(3600_000)
	seen := map[string]bool{}
	for round := range 60 {
		randomLoad(t, l, m, rng, rng.IntN(40), 12, CodecNone, ts)
		if rng.IntN(3) == 0 {
			fillAndRoll(t, l, m, ts)
		}
		o := CompactOptions{Below: l.LogEndOffset() - int64(rng.IntN(20)), MinDirtyRatio: ratios[rng.IntN(len(ratios))],
			DeleteRetention: time.Duration(rng.IntN(3)) * time.Hour, Now: time.UnixMilli(ts + int64(rng.IntN(3))*3600_000 + 1)}
		if rng.IntN(2) == 0 {
			o.MaxLag = time.Hour
		}
		d, err := l.Dirtiness(o)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		res, err := l.Compact(ctx, o)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		byRatio := d.DirtyBytes > 0 && d.DirtyRatio >= o.MinDirtyRatio
		if d.Due != res.Ran || d.DirtyRatio != res.DirtyRatio || res.Overdue != (d.Overdue && !byRatio) {
			t.Fatalf("round %d, %+v: said %+v, the pass found %+v", round, o, d, res)
		}
		if (d.DirtyBytes > 0) != (d.FirstDirtyTimestamp >= 0) || d.DirtyBytes > d.CleanableBytes {
			t.Fatalf("round %d: %+v", round, d)
		}
		if d.DirtyBytes > 0 && d.FirstDirtyTimestamp > ts {
			t.Fatalf("round %d: first dirty batch at %d, written at %d at the latest", round, d.FirstDirtyTimestamp, ts)
		}
		seen[map[bool]string{true: "due", false: "not due"}[d.Due]] = true
		if d.Overdue && !byRatio {
			seen["overdue"] = true
		}
		if res.TombstonesDue {
			seen["tombstones"] = true
		}
		if d.DirtyBytes > 0 && d.DirtyRatio < 1 {
			seen["partly dirty"] = true
		}
		ts += int64(rng.IntN(2)) * 1800_000
	}
	for _, k := range []string{"due", "not due", "overdue", "tombstones", "partly dirty"} {
		if !seen[k] {
			t.Errorf("no round was %s", k)
		}
	}

	l.compactMu.Lock()
	if _, err := l.Dirtiness(CompactOptions{Below: l.LogEndOffset()}); !errors.Is(err, ErrCompactionRunning) {
		t.Fatalf("while a pass runs: %v", err)
	}
	l.compactMu.Unlock()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Dirtiness(CompactOptions{Below: 1 << 40}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

// What ranking a log costs a cleaner pass: Dirtiness over a log of a
// hundred sealed segments, half of them dirty.
func BenchmarkDirtiness(b *testing.B) {
	l := mustOpen(b, "/p", compactOpts(NewMemFS()))
	defer l.Close()
	fill := func(segs int) {
		for i := 0; len(l.Segments()) < segs; i++ {
			bd := NewBuilder(BuilderOptions{})
			bd.Add(1000, fmt.Appendf(nil, "payment-%03d", i%100), bytes.Repeat([]byte("v"), 200), nil)
			mustAppend(b, l, bd.Build(), 1)
		}
	}
	fill(50)
	o := CompactOptions{Below: l.LogEndOffset(), MaxLag: time.Hour, Now: time.UnixMilli(2000)}
	if _, err := l.Compact(ctx, o); err != nil {
		b.Fatal(err)
	}
	fill(101)
	o.Below = l.LogEndOffset()
	b.ResetTimer()
	for range b.N {
		if d, err := l.Dirtiness(o); err != nil || !d.Due {
			b.Fatal(d, err)
		}
	}
}
