package cli

import (
	"context"
	"math/bits"
	"math/rand/v2"
	"testing"
	"testing/quick"
)

// fakeTarget is a target partition for findByHeaders: log[i] is the
// source offset the record at target offset i is a copy of, -1 for a
// record of the target's own; records below start were deleted.
type fakeTarget struct {
	log   []int64
	start int64
	reads int
}

func (f *fakeTarget) probe(_ context.Context, from int64) (int64, int64, bool, error) {
	f.reads++
	for at := max(from, f.start); at < int64(len(f.log)); at++ {
		if f.log[at] >= 0 {
			return at, f.log[at], true, nil
		}
	}
	return 0, 0, false, nil
}

// mirrorHistory is a target partition as mirror runs leave it: each run
// copies the source offsets from where it starts, in order (leaving out
// those skipped: deleted on the source), and stops somewhere; the next
// starts at or below where the last stopped (its commit). Records of the
// target's own come between.
func mirrorHistory(rnd *rand.Rand, n int64) (log []int64, skipped map[int64]bool) {
	skipped = map[int64]bool{}
	for range rnd.IntN(100) {
		skipped[rnd.Int64N(n)] = true
	}
	for range rnd.IntN(20) {
		log = append(log, -1)
	}
	for commit := int64(0); commit < n; {
		end := n
		last := rnd.IntN(3) == 0
		if !last {
			end = commit + rnd.Int64N(n-commit+1)
		}
		for s := commit; s < end; s++ {
			if rnd.IntN(100) == 0 {
				log = append(log, -1)
			}
			if !skipped[s] {
				log = append(log, s)
			}
		}
		if last {
			break
		}
		commit += rnd.Int64N(end - commit + 1)
	}
	return log, skipped
}

// The header scan never skips a record: on any history of mirror runs
// (crashes repeating records, records of the target's own, offsets
// skipped on the source, retention having deleted the start of the
// target), a consumer at the scan's translation of source offset S reads
// a copy of every source offset at or after S that the target still
// holds; without crashes it is exactly the first copy at or after S. It
// probes at most 2 + log2 of the partition's length.
func TestFindByHeadersNeverSkips(t *testing.T) {
	check := func(seed uint64) bool {
		rnd := rand.New(rand.NewPCG(seed, 5))
		const n = 600
		log, skipped := mirrorHistory(rnd, n)
		f := &fakeTarget{log: log}
		if rnd.IntN(3) == 0 {
			f.start = rnd.Int64N(int64(len(log)) + 1)
		}
		end := int64(len(log))
		// lastCopy[o]: the last target offset (at or past start) holding o.
		lastCopy := map[int64]int64{}
		monotone := true
		prev := int64(-1)
		for at := f.start; at < end; at++ {
			if o := log[at]; o >= 0 {
				lastCopy[o] = at
				monotone = monotone && o > prev
				prev = o
			}
		}
		for s := int64(0); s <= n+1; s++ {
			f.reads = 0
			got, probes, err := findByHeaders(context.Background(), f.start, end, s, f.probe)
			if len(lastCopy) == 0 {
				if err != errNoCopies {
					t.Logf("no copies left: translated %d to %d, %v", s, got, err)
					return false
				}
				continue
			}
			if err != nil || probes != f.reads || probes > 2+bits.Len64(uint64(end-f.start)) {
				t.Logf("source offset %d: %v after %d probes (%d reads) of %d records", s, err, probes, f.reads, end-f.start)
				return false
			}
			if got < f.start || got > end {
				t.Logf("source offset %d translates to %d, outside the log [%d, %d)", s, got, f.start, end)
				return false
			}
			for o, at := range lastCopy {
				if o >= s && !skipped[o] && at < got {
					t.Logf("source offset %d translates to %d, past the last copy of %d at %d", s, got, o, at)
					return false
				}
			}
			if monotone {
				want := end
				for at := f.start; at < end; at++ {
					if log[at] >= s {
						want = at
						break
					}
				}
				if got != want {
					t.Logf("without repeats, source offset %d translates to %d; want the first copy at or past it, %d", s, got, want)
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 100}); err != nil {
		t.Fatal(err)
	}
}

func TestParseSourcePosition(t *testing.T) {
	tp := mirrorTP("pay.ments", 3)
	if o, ok := parseSourcePosition(sourcePosition("pay.ments", 3, 12345), tp); !ok || o != 12345 {
		t.Fatalf("parse %q: %d %v", sourcePosition("pay.ments", 3, 12345), o, ok)
	}
	for _, bad := range []string{"", "pay.ments/3/", "pay.ments/3/-1", "pay.ments/3/+1", "pay.ments/3/1x", "pay.ments/30/1", "pay.ments/4/1",
		"pay.mentsX/3/1", "pay.ments/3/9223372036854775808"} {
		if o, ok := parseSourcePosition([]byte(bad), tp); ok {
			t.Errorf("parse %q: %d; want refused", bad, o)
		}
	}
}

// FuzzParseSourcePosition: no header value panics, what parses is a
// source offset, and sourcePosition writes it back to what parses the
// same.
func FuzzParseSourcePosition(f *testing.F) {
	f.Add([]byte("payments/0/123"))
	f.Add([]byte("payments/0/-1"))
	f.Add([]byte("payments/0/9223372036854775808"))
	f.Fuzz(func(t *testing.T, v []byte) {
		tp := mirrorTP("payments", 0)
		o, ok := parseSourcePosition(v, tp)
		if !ok {
			return
		}
		again, ok := parseSourcePosition(sourcePosition(tp.Topic, tp.Partition, o), tp)
		if o < 0 || !ok || again != o {
			t.Fatalf("%q parsed as %d, written %q, parsed again %d %v", v, o, sourcePosition(tp.Topic, tp.Partition, o), again, ok)
		}
	})
}
