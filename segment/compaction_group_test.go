package segment

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestGroupCleanables(t *testing.T) {
	// seg makes a cleanable of n bytes at list index at, offsets
	// [base, next).
	seg := func(at int, base, next int64, n int) cleanable {
		return cleanable{s: &segment{base: base}, data: make([]byte, n), next: next, at: at}
	}
	lim := groupLimits{maxBytes: 1000, maxEntries: 1000, interval: 4}
	sizes := func(gs [][]cleanable) string {
		var out []string
		for _, g := range gs {
			var s []string
			for _, c := range g {
				s = append(s, fmt.Sprint(len(c.data)))
			}
			out = append(out, strings.Join(s, "+"))
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct {
		name string
		segs []cleanable
		lim  groupLimits
		want string
	}{
		{"none", nil, lim, ""},
		{"one", []cleanable{seg(0, 0, 10, 500)}, lim, "500"},
		{"up to maxBytes", []cleanable{seg(0, 0, 10, 300), seg(1, 10, 20, 300), seg(2, 20, 30, 400), seg(3, 30, 40, 1)}, lim, "300+300+400 1"},
		{"a big one alone", []cleanable{seg(0, 0, 10, 10), seg(1, 10, 20, 995), seg(2, 20, 30, 10)}, lim, "10 995 10"},
		{"a segment not listed between", []cleanable{seg(0, 0, 10, 10), seg(2, 10, 20, 10), seg(3, 20, 30, 10)}, lim, "10 10+10"},
		{"an offset gap", []cleanable{seg(0, 0, 10, 10), seg(1, 11, 20, 10)}, lim, "10 10"},
		{"index entries", []cleanable{seg(0, 0, 10, 200), seg(1, 10, 20, 199), seg(2, 20, 30, 1)},
			groupLimits{maxBytes: 1000, maxEntries: 100, interval: 4}, "200+199 1"},
		{"offset span", []cleanable{seg(0, 0, 10, 10), seg(1, 10, math.MaxUint32+1, 10), seg(2, math.MaxUint32+1, math.MaxUint32+2, 10)},
			lim, "10+10 10"},
	} {
		if got := sizes(groupCleanables(tc.segs, tc.lim)); got != tc.want {
			t.Errorf("%s: groups %q, want %q", tc.name, got, tc.want)
		}
	}
}

// cleanedLog appends a random keyed load over few keys to a log of 4 KiB
// segments and cleans it once: many small sealed segments, each what
// cleaning left of a full one.
func cleanedLog(t *testing.T, fs *MemFS) (*Log, *compactModel) {
	t.Helper()
	l := mustOpen(t, "/p", compactOpts(fs))
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(7, 7)), 300, 6, CodecNone, 1000)
	if _, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}); err != nil {
		t.Fatal(err)
	}
	return l, m
}

// segmentFiles returns the base offsets of the .log files in /p, and
// fails on any other file but indexes and checkpoints.
func segmentFiles(t *testing.T, fs *MemFS) []int64 {
	t.Helper()
	names, err := fs.ReadDir("/p")
	if err != nil {
		t.Fatal(err)
	}
	var bases []int64
	for _, n := range names {
		if b, ok := parseSegmentName(n); ok {
			bases = append(bases, b)
		} else if strings.HasSuffix(n, ".tmp") || strings.HasSuffix(n, swapSuffix) || strings.HasSuffix(n, deletedSuffix) {
			t.Fatalf("file %s left behind", n)
		}
	}
	slices.Sort(bases)
	return bases
}

// TestCompactMergesSmallSegments: a pass over segments earlier passes
// left small merges neighbours into segments of at most SegmentBytes,
// serving the same records, and the files on disk are the log's segments.
func TestCompactMergesSmallSegments(t *testing.T) {
	fs := NewMemFS()
	l, m := cleanedLog(t, fs)
	end := l.active().base
	before := len(l.Segments())
	// More of the same keys, so that the next pass has something dirty.
	randomLoad(t, l, m, rand.New(rand.NewPCG(8, 8)), 40, 6, CodecNone, 1000)
	want := checkCompaction(t, l, m, end, false, false)
	res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)})
	if err != nil {
		t.Fatal(err)
	}
	if res.SegmentsMerged == 0 || res.Segments == 0 {
		t.Fatalf("pass merged no segments: %+v", res)
	}
	after := len(l.Segments())
	if after >= before-res.SegmentsMerged/2 {
		t.Fatalf("%d segments before, %d after merging %d", before, after, res.SegmentsMerged)
	}
	got := checkCompaction(t, l, m, l.active().base, true, false)
	for off, r := range want {
		if g, ok := got[off]; ok && (string(g.value) != string(r.value)) {
			t.Fatalf("offset %d changed", off)
		}
	}
	l.mu.RLock()
	for i, s := range l.mu.segs[:len(l.mu.segs)-1] {
		if s.size > l.opts.SegmentBytes {
			t.Errorf("segment %d holds %d bytes, more than SegmentBytes %d", s.base, s.size, l.opts.SegmentBytes)
		}
		if s.next != l.mu.segs[i+1].base {
			t.Errorf("segment %d ends at %d, the next starts at %d", s.base, s.next, l.mu.segs[i+1].base)
		}
	}
	l.mu.RUnlock()
	if files := segmentFiles(t, fs); !slices.Equal(files, l.Segments()) {
		t.Fatalf("segment files %v, log %v", files, l.Segments())
	}
	// Reading from every offset finds it (the index of a merged segment).
	for off := range got {
		bs := readAll(t, l, off)
		if len(bs) == 0 || bs[0].BaseOffset() > off || bs[0].LastOffset() < off {
			t.Fatalf("read at %d starts with the wrong batch", off)
		}
	}
	// A second pass with nothing new to clean changes nothing.
	segs := l.Segments()
	if res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000), DeleteRetention: time.Hour}); err != nil || res.Segments != 0 {
		t.Fatalf("second pass: %+v, %v", res, err)
	}
	if !slices.Equal(segs, l.Segments()) {
		t.Fatalf("second pass changed segments %v to %v", segs, l.Segments())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	rl := mustOpen(t, "/p", compactOpts(fs))
	defer rl.Close()
	sameRecords(t, visible(t, rl), got, "reopened")
	if !slices.Equal(segs, rl.Segments()) {
		t.Fatalf("reopened with segments %v, closed with %v", rl.Segments(), segs)
	}
	if _, err := scrubAll(t, rl, 1<<20); err != nil { // merged segments are sound (scrub.go)
		t.Fatalf("scrub: %v", err)
	}
}

// TestCompactMergeCrashAtEveryStep crashes a pass that merges segments at
// every file operation after the first group's new files are written,
// and opens the copy of the file system as durable then: the log opens
// with no file of a swap left, serves a valid compaction of what was
// appended, and a pass finishes the job.
func TestCompactMergeCrashAtEveryStep(t *testing.T) {
	base := NewMemFS()
	l, m := cleanedLog(t, base)
	randomLoad(t, l, m, rand.New(rand.NewPCG(9, 9)), 40, 6, CodecLZ4, 1000)
	end := l.active().base
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	n, merged := crashEveryStep(t, base, m, end, func(n int, crashed *MemFS, cl *Log) {
		if files := segmentFiles(t, crashed); !slices.Equal(files, cl.Segments()) {
			t.Fatalf("crash at operation %d: segment files %v, log %v", n, files, cl.Segments())
		}
	})
	if n < 8 || !merged {
		t.Fatalf("only %d file operations after the first swap hook; merged: %v", n, merged)
	}
}

// TestCompactMergeKeepsViews: a View of a segment a pass merged away keeps
// serving its bytes until released.
func TestCompactMergeKeepsViews(t *testing.T) {
	fs := NewMemFS()
	l, m := cleanedLog(t, fs)
	defer l.Close()
	randomLoad(t, l, m, rand.New(rand.NewPCG(10, 10)), 40, 6, CodecNone, 1000)
	segs := l.Segments()
	from := segs[1] // a segment that is not first in its group
	v, err := l.Read(from, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	held := slices.Clone(v.Data)
	res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)})
	if err != nil || res.SegmentsMerged == 0 {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	if slices.Contains(l.Segments(), from) {
		t.Fatalf("segment %d still in the log after the merge: %v", from, l.Segments())
	}
	if !slices.Equal(held, v.Data) {
		t.Fatal("a View's bytes changed under a merge")
	}
}

// TestCompactKeepsALongLivedLogInFewSegments: a compacted log whose active
// segment is sealed every hour (max.compaction.lag.ms) and cleaned after
// each roll keeps a bounded number of segments, not one per roll, and a
// valid compaction of everything appended.
func TestCompactKeepsALongLivedLogInFewSegments(t *testing.T) {
	const rolls = 200
	fs := NewMemFS()
	now := time.UnixMilli(1_000_000)
	o := compactOpts(fs)
	o.SegmentBytes, o.RollAge, o.Now = 16<<10, time.Hour, func() time.Time { return now }
	l := mustOpen(t, "/p", o)
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	rng := rand.New(rand.NewPCG(11, 11))
	merged := 0
	for range rolls {
		randomLoad(t, l, m, rng, 10, 20, CodecNone, now.UnixMilli())
		now = now.Add(time.Hour)
		m.appendKeyed(t, l, CodecNone, keyed{key: []byte("payment-000"), value: []byte("rolls"), ts: now.UnixMilli()})
		res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), MinDirtyRatio: 0.5, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		merged += res.SegmentsMerged
	}
	// The segments passes cleaned, below the cleaner point: neighbours
	// of at most SegmentBytes together are one. The dirty ones after them
	// wait for min.cleanable.dirty.ratio.
	var clean, cleanBytes int64
	l.mu.RLock()
	for _, s := range l.mu.segs {
		if s.next <= l.cleanerPoint {
			clean++
			cleanBytes += s.size
		}
	}
	segs := len(l.mu.segs)
	l.mu.RUnlock()
	t.Logf("%d rolls: %d segments, %d of them cleaned (%d bytes), %d segments merged", rolls, segs, clean, cleanBytes, merged)
	if max := 2*cleanBytes/o.SegmentBytes + 1; clean > max || clean == 0 {
		t.Fatalf("%d rolls left %d cleaned segments of %d bytes in all; want 1 to %d", rolls, clean, cleanBytes, max)
	}
	checkCompaction(t, l, m, l.active().base, false, false)
}
