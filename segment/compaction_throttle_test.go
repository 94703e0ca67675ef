package segment

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// sealedBytes is the size of the log's sealed segments.
func sealedBytes(l *Log) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.mu.segs[:len(l.mu.segs)-1] {
		n += s.size
	}
	return n
}

// A pass tells its Throttle every byte it reads and writes: each sealed
// segment read twice (mapping the keys, then rewriting), and each new
// segment written and scanned back. An error from the Throttle ends the
// pass with it: the segments swapped in stay, the one being rewritten is
// left as it was, with no temporary file; the next pass goes on.
func TestCompactThrottle(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(5, 5)), 300, 10, CodecNone, 1000)
	o := CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}

	// A throttle that fails at its 40th call after a new segment file
	// appeared, while that segment is being rewritten.
	sealed := sealedBytes(l)
	before := visible(t, l)
	calls, wrote := 0, false
	stop := errors.New("throttle says stop")
	o.Throttle = func(_ context.Context, n int) error {
		if n <= 0 {
			t.Errorf("throttle told of %d bytes", n)
		}
		if !wrote {
			names, _ := fs.ReadDir("/p")
			for _, n := range names {
				wrote = wrote || strings.HasSuffix(n, cleanedSuffix)
			}
		}
		if wrote {
			if calls++; calls == 40 {
				return stop
			}
		}
		return nil
	}
	if _, err := l.Compact(ctx, o); !errors.Is(err, stop) || !wrote {
		t.Fatalf("pass with a failing throttle: %v (stopped while writing a new segment: %v)", err, wrote)
	}
	// Segments swapped before it stopped are compacted; the rest are as
	// they were.
	if got := visible(t, l); len(got) == len(before) {
		t.Fatal("the pass rewrote no segment before its throttle stopped it")
	}
	checkCompaction(t, l, m, l.active().base, false, false)
	names, _ := fs.ReadDir("/p")
	for _, n := range names {
		if strings.HasSuffix(n, ".tmp") {
			t.Fatalf("%s left behind", n)
		}
	}

	sealed = sealedBytes(l)
	var told int64
	o.Throttle = func(_ context.Context, n int) error { told += int64(n); return nil }
	res, err := l.Compact(ctx, o)
	if err != nil || !res.Ran || res.Segments == 0 {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	// Every sealed segment is below the first one the pass did not map, so
	// both loops read it whole.
	if want := 2*sealed + 2*res.BytesAfter; told != want {
		t.Fatalf("throttle told of %d bytes; want %d (sealed %d read twice, %d written and scanned back)", told, want, sealed, res.BytesAfter)
	}
	checkCompaction(t, l, m, l.active().base, true, false)
}
