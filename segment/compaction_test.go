package segment

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// keyed is one record a compaction test appends: a nil value is a
// tombstone, a nil key a record compaction never removes.
type keyed struct {
	key, value []byte
	ts         int64
}

// compactModel is what a compaction test appended, by offset.
type compactModel struct {
	recs map[int64]keyed
	leo  int64
}

// compactOpts returns the options of the compaction tests' logs: small
// segments with several index entries each.
func compactOpts(fs *MemFS) Options {
	return Options{FS: fs, SegmentBytes: 4096, IndexInterval: 256, Logger: quietLogger}
}

// appendKeyed appends recs as one batch (with codec) and records them in m.
func (m *compactModel) appendKeyed(t *testing.T, l *Log, codec Codec, recs ...keyed) {
	t.Helper()
	b := NewBuilder(BuilderOptions{Compression: codec})
	for _, r := range recs {
		b.Add(r.ts, r.key, r.value, nil)
	}
	info := mustAppend(t, l, b.Build(), 1)
	for i, r := range recs {
		m.recs[info.BaseOffset+int64(i)] = r
	}
	m.leo = info.LastOffset + 1
}

// randomLoad appends n batches of 1–4 records over nkeys keys, about one
// in ten a tombstone and one in fifty without a key, with codec.
func randomLoad(t *testing.T, l *Log, m *compactModel, rng *rand.Rand, n, nkeys int, codec Codec, ts int64) {
	t.Helper()
	for i := 0; i < n; i++ {
		recs := make([]keyed, 1+rng.IntN(4))
		for j := range recs {
			r := keyed{key: fmt.Appendf(nil, "payment-%03d", rng.IntN(nkeys)), ts: ts}
			switch x := rng.IntN(50); {
			case x == 0:
				r.key = nil
				fallthrough
			case x >= 5:
				r.value = fmt.Appendf(nil, `{"status":"settled","seq":%d,"pad":"%s"}`, i*10+j, bytes.Repeat([]byte("x"), rng.IntN(80)))
			}
			recs[j] = r
		}
		m.appendKeyed(t, l, codec, recs...)
	}
}

// visible returns every record the log serves from its start, by offset,
// after checking that batches are contiguous and the offsets of each
// increase within it.
func visible(t *testing.T, l *Log) map[int64]keyed {
	t.Helper()
	out := map[int64]keyed{}
	next := l.LogStartOffset()
	for _, b := range readAll(t, l, l.LogStartOffset()) {
		if b.BaseOffset() > next {
			t.Fatalf("batch at %d after one ending at %d", b.BaseOffset(), next-1)
		}
		next = b.LastOffset() + 1
		it := b.Iter()
		for it.Next() {
			r := it.Record()
			if r.Offset > b.LastOffset() {
				t.Fatalf("record %d past its batch's last offset %d", r.Offset, b.LastOffset())
			}
			out[r.Offset] = keyed{key: bytes.Clone(r.Key), value: bytes.Clone(r.Value), ts: r.Timestamp}
		}
		if err := it.Err(); err != nil {
			t.Fatalf("batch %d: %v", b.BaseOffset(), err)
		}
	}
	if next != l.LogEndOffset() {
		t.Fatalf("batches end at %d, log end %d", next, l.LogEndOffset())
	}
	return out
}

// checkCompaction checks what compaction promises of a log whose records
// below end may have been compacted: every record served is the one
// appended at its offset; every record at or above end is there; below
// end, the latest record of each key is there unless it is a tombstone
// (tombstonesGone says whether those may be gone), and a record with a
// later one of its key below end is not there when strict (the pass
// covered all of it). Records without a key are all there.
func checkCompaction(t *testing.T, l *Log, m *compactModel, end int64, strict, tombstonesGone bool) map[int64]keyed {
	t.Helper()
	got := visible(t, l)
	latest := map[string]int64{}
	for off, r := range m.recs {
		if r.key != nil && off < end && off >= latest[string(r.key)] {
			latest[string(r.key)] = off
		}
	}
	for off, r := range got {
		want, ok := m.recs[off]
		if !ok || !bytes.Equal(r.key, want.key) || !bytes.Equal(r.value, want.value) || (r.value == nil) != (want.value == nil) || r.ts != want.ts {
			t.Fatalf("offset %d serves %q=%q, appended %q=%q", off, r.key, r.value, want.key, want.value)
		}
	}
	for off, r := range m.recs {
		_, there := got[off]
		switch {
		case off >= end || r.key == nil:
			if !there {
				t.Fatalf("offset %d (%q) is gone; compaction may not touch it", off, r.key)
			}
		case latest[string(r.key)] == off:
			if !there && !(r.value == nil && tombstonesGone) {
				t.Fatalf("offset %d, the latest record of key %q (tombstone: %v), is gone", off, r.key, r.value == nil)
			}
		case strict && there:
			t.Fatalf("offset %d of key %q is still there; offset %d supersedes it", off, r.key, latest[string(r.key)])
		}
	}
	if l.LogEndOffset() != m.leo {
		t.Fatalf("log end %d, want %d", l.LogEndOffset(), m.leo)
	}
	return got
}

func sameRecords(t *testing.T, got, want map[int64]keyed, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d records, want %d", what, len(got), len(want))
	}
	for off, r := range want {
		if g, ok := got[off]; !ok || !bytes.Equal(g.key, r.key) || !bytes.Equal(g.value, r.value) {
			t.Fatalf("%s: offset %d differs", what, off)
		}
	}
}

func TestCompactKeepsTheLatestRecordOfEachKey(t *testing.T) {
	for _, codec := range []Codec{CodecNone, CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			fs := NewMemFS()
			opts := compactOpts(fs)
			l := mustOpen(t, "/p", opts)
			m := &compactModel{recs: map[int64]keyed{}}
			rng := rand.New(rand.NewPCG(1, uint64(codec)))
			randomLoad(t, l, m, rng, 400, 30, codec, 1000)
			before := l.Size()
			end := l.active().base
			res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), DeleteRetention: time.Hour, Now: time.UnixMilli(2000)})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Ran || res.Segments == 0 || res.RecordsRemoved == 0 || res.CleanedTo != end || res.FirstDirty != 0 {
				t.Fatalf("pass did not clean the sealed segments (end %d): %+v", end, res)
			}
			if res.TombstonesRemoved != 0 {
				t.Fatalf("tombstones in the dirty part removed: %+v", res)
			}
			got := checkCompaction(t, l, m, end, true, false)
			// The scrub takes compacted segments as sound (scrub.go).
			if _, err := scrubAll(t, l, 1<<20); err != nil {
				t.Fatalf("scrub of the compacted log: %v", err)
			}
			if after := l.Size(); after >= before || res.BytesAfter >= res.BytesBefore {
				t.Fatalf("log %d bytes after compaction, %d before (%+v)", after, before, res)
			}
			// A read from any offset, the removed ones included, starts
			// at the first record at or after it.
			for off := int64(0); off < m.leo; off++ {
				v, err := l.Read(off, 1, -1)
				if err != nil {
					t.Fatalf("Read(%d): %v", off, err)
				}
				first := int64(-1)
				SplitBatches(v.Data, func(b Batch) error {
					for it := b.Iter(); it.Next() && first < 0; {
						if r := it.Record(); r.Offset >= off {
							first = r.Offset
						}
					}
					return nil
				})
				v.Release()
				want := int64(-1)
				for o := off; o < m.leo && want < 0; o++ {
					if _, ok := got[o]; ok {
						want = o
					}
				}
				if first >= 0 && first != want {
					t.Fatalf("Read(%d) starts at record %d, want %d", off, first, want)
				}
			}
			// The same records after a clean reopen, and after a crash.
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, "/p", opts)
			sameRecords(t, visible(t, l), got, "after a clean reopen")
			crashed := fs.CrashClone()
			l.crashForTest()
			opts.FS = crashed
			l = mustOpen(t, "/p", opts)
			defer l.Close()
			sameRecords(t, visible(t, l), got, "after a crash")
			if l.TornAtOpen() {
				t.Fatal("a compacted log opened torn")
			}
		})
	}
}

// tombstoneLog appends a key's value and then its tombstone, fills two
// segments with another key and rolls, so that both are below the active
// segment.
func tombstoneLog(t *testing.T, l *Log, m *compactModel, ts int64) {
	t.Helper()
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("card-1"), value: []byte("authorized"), ts: ts})
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("card-1"), ts: ts})
	fillAndRoll(t, l, m, ts)
}

// fillAndRoll appends records of key "filler" until the log rolls twice.
func fillAndRoll(t *testing.T, l *Log, m *compactModel, ts int64) {
	t.Helper()
	for base := l.active().base; l.active().base == base || len(l.Segments()) < 3; {
		m.appendKeyed(t, l, CodecNone, keyed{key: []byte("filler"), value: bytes.Repeat([]byte("f"), 500), ts: ts})
	}
}

func TestCompactRemovesTombstonesAfterDeleteRetention(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	tombstoneLog(t, l, m, 1000)
	opts := CompactOptions{DeleteRetention: time.Minute}
	pass := func(now int64) CompactResult {
		t.Helper()
		opts.Below, opts.Now = l.LogEndOffset(), time.UnixMilli(now)
		res, err := l.Compact(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	tombstone := func() bool {
		r, ok := visible(t, l)[1]
		return ok && r.value == nil
	}
	// First pass: the value goes, the tombstone stays (it was dirty).
	if res := pass(1000 + time.Hour.Milliseconds()); res.RecordsRemoved == 0 || res.TombstonesRemoved != 0 || !tombstone() {
		t.Fatalf("first pass: %+v, tombstone there: %v", res, tombstone())
	}
	if _, ok := visible(t, l)[0]; ok {
		t.Fatal("the value the tombstone deletes is still there")
	}
	// Cleaned past now, but younger than delete.retention.ms: it stays.
	fillAndRoll(t, l, m, 5000)
	if res := pass(1000 + 30*time.Second.Milliseconds()); res.TombstonesRemoved != 0 || !tombstone() {
		t.Fatalf("tombstone younger than DeleteRetention removed: %+v", res)
	}
	// Older than delete.retention.ms: it goes.
	fillAndRoll(t, l, m, 5000)
	if res := pass(1000 + 2*time.Minute.Milliseconds()); res.TombstonesRemoved != 1 || tombstone() {
		t.Fatalf("old tombstone kept: %+v", res)
	}
	checkCompaction(t, l, m, l.active().base, false, true)
}

func TestCompactStaysBelowItsBounds(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("k"), value: []byte("old"), ts: 1000})
	fillAndRoll(t, l, m, 1000)
	// The record that supersedes "old" is in a sealed segment above the
	// bound (the HW): it may still be truncated, so "old" must stay.
	hw := l.LogEndOffset()
	m.appendKeyed(t, l, CodecNone, keyed{key: []byte("k"), value: []byte("new"), ts: 1000})
	fillAndRoll(t, l, m, 1000)
	res, err := l.Compact(ctx, CompactOptions{Below: hw, Now: time.UnixMilli(2000)})
	if err != nil {
		t.Fatal(err)
	}
	if res.CleanedTo > hw {
		t.Fatalf("cleaned to %d, past the bound %d", res.CleanedTo, hw)
	}
	if r, ok := visible(t, l)[0]; !ok || string(r.value) != "old" {
		t.Fatal("a record superseded only above the bound was removed")
	}
	// min.compaction.lag.ms: records newer than the lag are not cleaned,
	// nor anything after them.
	res, err = l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), MinLag: time.Hour, Now: time.UnixMilli(2000)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ran {
		t.Fatalf("pass ran over records younger than MinLag: %+v", res)
	}
	// Without the bounds it goes.
	res, err = l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := visible(t, l)[0]; ok || !res.Ran {
		t.Fatalf("superseded record kept once the bound passed its successor: %+v", res)
	}
	checkCompaction(t, l, m, l.active().base, true, false)
}

func TestCompactDirtyRatioAndCheckpoint(t *testing.T) {
	fs := NewMemFS()
	opts := compactOpts(fs)
	l := mustOpen(t, "/p", opts)
	m := &compactModel{recs: map[int64]keyed{}}
	rng := rand.New(rand.NewPCG(7, 7))
	randomLoad(t, l, m, rng, 200, 10, CodecNone, 1000)
	o := CompactOptions{MinDirtyRatio: 0.5, Now: time.UnixMilli(2000), DeleteRetention: time.Hour}
	o.Below = l.LogEndOffset()
	res, err := l.Compact(ctx, o)
	if err != nil || !res.Ran || res.DirtyRatio != 1 {
		t.Fatalf("first pass: %+v, %v", res, err)
	}
	// Nothing new: nothing dirty.
	res, err = l.Compact(ctx, o)
	if err != nil || res.Ran || res.DirtyRatio != 0 {
		t.Fatalf("second pass over a clean log: %+v, %v", res, err)
	}
	// The checkpoint survives a reopen.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", opts)
	defer l.Close()
	res, err = l.Compact(ctx, o)
	if err != nil || res.Ran {
		t.Fatalf("pass after a reopen: %+v, %v", res, err)
	}
	// A little more data: below the ratio; then a ratio it passes.
	fillAndRoll(t, l, m, 3000)
	o.Below, o.MinDirtyRatio = l.LogEndOffset(), 0.9
	res, err = l.Compact(ctx, o)
	if err != nil || res.Ran || res.DirtyRatio <= 0 || res.DirtyRatio >= 0.9 {
		t.Fatalf("pass with a little dirt: %+v, %v", res, err)
	}
	o.MinDirtyRatio = 0.1
	res, err = l.Compact(ctx, o)
	if err != nil || !res.Ran {
		t.Fatalf("pass over the ratio: %+v, %v", res, err)
	}
	checkCompaction(t, l, m, l.active().base, true, false)
}

// A key map bounded to about 8 keys, by their number (MaxKeys) or by
// their memory (MaxMapBytes), cleans a dirty part of 40 keys over several
// passes, each mapping at most one batch past the bound.
func TestCompactMaxKeysTakesSeveralPasses(t *testing.T) {
	const keyLen = len("payment-000") // randomLoad's keys
	for _, bound := range []CompactOptions{{MaxKeys: 8}, {MaxMapBytes: 8 * (int64(keyLen) + KeyMapEntryBytes)}} {
		t.Run(fmt.Sprintf("keys %d bytes %d", bound.MaxKeys, bound.MaxMapBytes), func(t *testing.T) {
			fs := NewMemFS()
			l := mustOpen(t, "/p", compactOpts(fs))
			defer l.Close()
			m := &compactModel{recs: map[int64]keyed{}}
			rng := rand.New(rand.NewPCG(3, 3))
			randomLoad(t, l, m, rng, 300, 40, CodecNone, 1000)
			end := l.active().base
			o := bound
			o.Below, o.DeleteRetention, o.Now = l.LogEndOffset(), time.Hour, time.UnixMilli(2000)
			passes := 0
			for {
				res, err := l.Compact(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				if !res.Ran {
					break
				}
				if res.Keys > 8+4 { // at most one batch past the limit
					t.Fatalf("pass mapped %d keys with a bound of 8", res.Keys)
				}
				if res.CleanedTo <= res.FirstDirty {
					t.Fatalf("pass made no progress: %+v", res)
				}
				passes++
				checkCompaction(t, l, m, res.CleanedTo, false, false)
			}
			if passes < 3 {
				t.Fatalf("%d passes; a key map of 8 keys over 40 needs several", passes)
			}
			checkCompaction(t, l, m, end, true, false)
		})
	}
}

// TestCompactCrashAtEveryStep crashes a pass at every file operation after
// the first segment's new files are written (a copy of the file system as
// durable at that moment) and opens the copy: the log must open, scan
// cleanly and serve a valid compaction of what was appended.
func TestCompactCrashAtEveryStep(t *testing.T) {
	base := NewMemFS()
	opts := compactOpts(base)
	l := mustOpen(t, "/p", opts)
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(5, 5)), 150, 12, CodecLZ4, 1000)
	end := l.active().base
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := crashEveryStep(t, base, m, end, nil); n < 5 {
		t.Fatalf("only %d file operations after the first swap hook", n)
	}
}

// crashEveryStep runs a pass over a copy of base (a closed log in /p)
// once for every file operation after the pass's first swap hook,
// crashing it there: it opens the copy of the file system as durable at
// that instant and checks that it serves a valid compaction of m below
// end, passes check (if any) and that a pass over it finishes the job. It
// returns the number of operations after the hook, and whether any pass
// merged segments.
func crashEveryStep(t *testing.T, base *MemFS, m *compactModel, end int64, check func(n int, crashed *MemFS, l *Log)) (int, bool) {
	t.Helper()
	merged := false
	for n := 0; ; n++ {
		fs := base.CrashClone()
		o := compactOpts(fs)
		l := mustOpen(t, "/p", o)
		var ops atomic.Int64
		var crashed *MemFS
		l.compactSwapHook = func() {
			fs.SetFault(func(op FaultOp, path string) error {
				if ops.Add(1)-1 == int64(n) && crashed == nil {
					crashed = fs.CrashClone()
				}
				return nil
			})
		}
		res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)})
		if err != nil {
			t.Fatal(err)
		}
		merged = merged || res.SegmentsMerged > 0
		fs.SetFault(nil)
		if crashed == nil {
			checkCompaction(t, l, m, end, true, false)
			l.Close()
			return n, merged
		}
		l.crashForTest()
		o.FS = crashed
		cl := mustOpen(t, "/p", o)
		checkCompaction(t, cl, m, end, false, false)
		if check != nil {
			check(n, crashed, cl)
		}
		// A pass over the recovered log finishes the job.
		if _, err := cl.Compact(ctx, CompactOptions{Below: cl.LogEndOffset(), Now: time.UnixMilli(2000)}); err != nil {
			t.Fatalf("crash at operation %d: pass after recovery: %v", n, err)
		}
		checkCompaction(t, cl, m, end, true, false)
		cl.Close()
	}
}

// TestCompactBesideAppendsAndReads runs passes while a writer appends and
// rolls and readers read the whole log, some holding their View across a
// pass: every read is a valid compaction of what was appended, and a View
// taken before a swap keeps its bytes.
func TestCompactBesideAppendsAndReads(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	rng := rand.New(rand.NewPCG(9, 9))
	randomLoad(t, l, m, rng, 100, 10, CodecNone, 1000)

	held, err := l.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	heldCopy := bytes.Clone(held.Data)

	var mu sync.Mutex // guards m
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the writer
		defer wg.Done()
		r := rand.New(rand.NewPCG(10, 10))
		for i := 0; i < 300; i++ {
			mu.Lock()
			randomLoad(t, l, m, r, 1, 10, CodecNone, 1000)
			mu.Unlock()
		}
	}()
	go func() { // a reader
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			from := l.LogStartOffset()
			v, err := l.Read(from, 1<<20, -1)
			if err != nil {
				t.Error(err)
				return
			}
			if _, err := SplitBatches(v.Data, func(b Batch) error { return b.ValidateRecords() }); err != nil {
				t.Errorf("read during compaction: %v", err)
			}
			v.Release()
		}
	}()
	for i := 0; i < 20; i++ {
		if _, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if !bytes.Equal(held.Data, heldCopy) {
		t.Fatal("a View held across compaction changed")
	}
	held.Release()
	// DeleteRetention 0: a tombstone goes in any pass after the one that
	// cleaned past it (one with nothing dirty too).
	checkCompaction(t, l, m, l.active().base, false, true)
	if _, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}); err != nil {
		t.Fatal(err)
	}
	checkCompaction(t, l, m, l.active().base, true, true)
}

func TestCompactRefusesASecondPassAndAClosedLog(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(1, 1)), 100, 5, CodecNone, 1000)
	started, release := make(chan struct{}), make(chan struct{})
	l.compactSwapHook = func() {
		l.compactSwapHook = nil
		close(started)
		<-release
	}
	errc := make(chan error, 1)
	go func() {
		_, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset()})
		errc <- err
	}()
	<-started
	if _, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset()}); !errors.Is(err, ErrCompactionRunning) {
		t.Fatalf("second concurrent pass: %v, want ErrCompactionRunning", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	l.Close()
	if _, err := l.Compact(ctx, CompactOptions{Below: 1 << 40}); !errors.Is(err, ErrClosed) {
		t.Fatalf("pass on a closed log: %v, want ErrClosed", err)
	}
}

func TestCompactedBatchChecks(t *testing.T) {
	b := NewBuilder(BuilderOptions{})
	for i := 0; i < 5; i++ {
		b.Add(1000, fmt.Appendf(nil, "k%d", i%2), []byte("v"), nil)
	}
	batch := b.Build()
	drop := func(keep ...int64) Batch {
		out, _, err := compactBatch(batch, func(r Record) recordFate {
			for _, k := range keep {
				if r.Offset == k {
					return keepRecord
				}
			}
			return dropSuperseded
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, keep := range [][]int64{{3, 4}, {0, 2, 4}, {4}, nil} {
		out := drop(keep...)
		if err := out.Validate(); err != nil {
			t.Fatalf("keep %v: %v", keep, err)
		}
		if !out.Compacted() || out.RecordCount() != int32(len(keep)) || out.LastOffset() != 4 {
			t.Fatalf("keep %v: compacted %v, %d records, last %d", keep, out.Compacted(), out.RecordCount(), out.LastOffset())
		}
		var got []int64
		for it := out.Iter(); it.Next(); {
			got = append(got, it.Record().Offset)
		}
		if fmt.Sprint(got) != fmt.Sprint(keep) && !(len(got) == 0 && len(keep) == 0) {
			t.Fatalf("keep %v: records %v", keep, got)
		}
	}
	// The relaxed checks hold only with the bit: the same bytes without it
	// are refused, and so is a compacted batch claiming more records than
	// its offsets span.
	out := drop(0, 2, 4)
	plain := edited(out, func(h []byte) { be.PutUint16(h[offAttributes:], 0) })
	if err := plain.Validate(); err == nil {
		t.Fatal("a batch with gaps in its offsets validated without the compacted bit")
	}
	over := edited(out, func(h []byte) { be.PutUint32(h[offRecordCount:], 6) })
	if err := over.Validate(); err == nil {
		t.Fatal("a compacted batch of 6 records over 5 offsets validated")
	}
	// Offset deltas must increase.
	swapped := edited(drop(3, 4), func(h []byte) {})
	it := swapped.Iter()
	it.Next()
	first := bytes.Clone(it.raw())
	it.Next()
	second := bytes.Clone(it.raw())
	copy(swapped[HeaderSize:], append(second, first...))
	swapped = edited(swapped, func([]byte) {})
	if err := swapped.ValidateRecords(); err == nil {
		t.Fatal("a compacted batch with decreasing offset deltas decoded")
	}
}

// edited returns a copy of b changed by fn, with its CRC recomputed.
func edited(b Batch, fn func(h []byte)) Batch {
	out := bytes.Clone(b)
	fn(out)
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

// TestCompactOnDisk compacts a log on the real file system (mmap, rename
// over a mapped file) and checks the rewritten files as `paymentlog log
// dump` reads them.
func TestCompactOnDisk(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 64 << 10, IndexInterval: 1024, Logger: quietLogger}
	l := mustOpen(t, dir, opts)
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(11, 11)), 3000, 50, CodecZstd, 1_700_000_000_000)
	end := l.active().base
	held, err := l.Read(0, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	heldCopy := bytes.Clone(held.Data)
	res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), DeleteRetention: time.Hour, Now: time.UnixMilli(1_700_000_001_000)})
	if err != nil || res.Segments == 0 {
		t.Fatalf("%+v, %v", res, err)
	}
	if !bytes.Equal(held.Data, heldCopy) {
		t.Fatal("a View taken before the swap changed")
	}
	held.Release()
	got := checkCompaction(t, l, m, end, true, false)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "00000000000000000000")
	data, err := os.ReadFile(seg + ".log")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	s, err := DumpLog(&out, bytes.NewReader(data), int64(len(data)), DumpOptions{Records: true})
	if err != nil || s.Corrupt || s.Gaps != 0 || s.BadRecords != 0 || s.FirstOffset != 0 || !strings.Contains(out.String(), "compacted: true") {
		t.Fatalf("%+v %v\n%s", s, err, out.String())
	}
	checkIndexFiles(t, seg)
	if matches, _ := filepath.Glob(filepath.Join(dir, "*"+cleanedSuffix)); len(matches) != 0 {
		t.Fatalf("left behind: %v", matches)
	}
	l = mustOpen(t, dir, opts)
	defer l.Close()
	sameRecords(t, visible(t, l), got, "reopened")
}

// A segment that retention deletes while a pass rewrites it stays deleted:
// the pass finds it gone when it takes deleteMu and drops its new files.
func TestCompactLosesARaceWithDeletion(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(2, 2)), 200, 8, CodecNone, 1000)
	first := l.Segments()[1] // the first segment ends where the second starts
	l.compactSwapHook = func() {
		l.compactSwapHook = nil
		if err := l.DeleteBefore(ctx, first); err != nil {
			t.Error(err)
		}
	}
	if _, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != first {
		t.Fatalf("log start %d, want %d", l.LogStartOffset(), first)
	}
	names, _ := fs.ReadDir("/p")
	for _, n := range names {
		if strings.HasSuffix(n, cleanedSuffix) || strings.HasPrefix(n, segmentName(0)) {
			t.Fatalf("left behind: %s", n)
		}
	}
	for off := range m.recs {
		if off < first {
			delete(m.recs, off)
		}
	}
	checkCompaction(t, l, m, l.active().base, false, false)
}

// Under SyncNever sealed segments wait for a flush; a pass leaves them
// alone until then (what it rewrites must be durable already, or a crash
// could bring back an older copy beside newer files).
func TestCompactWaitsForDurableSegments(t *testing.T) {
	fs := NewMemFS()
	opts := compactOpts(fs)
	opts.Sync = SyncNever
	l := mustOpen(t, "/p", opts)
	defer l.Close()
	// The background flusher's first fsync of a sealed segment waits
	// until the test releases it.
	blocked, release := holdFirstLogSync(fs)
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(4, 4)), 200, 8, CodecNone, 1000)
	<-blocked
	o := CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}
	if res, err := l.Compact(ctx, o); err != nil || res.Ran {
		t.Fatalf("pass over segments not yet durable: %+v, %v", res, err)
	}
	close(release)
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Under SyncNever the background flusher raises the recovery point
	// once its fsyncs are done, which may be just after Sync returned.
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.appendMu.Lock()
		rp, base := l.recoveryPoint, l.active().base
		l.appendMu.Unlock()
		if rp >= base {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recovery point %d still below the active segment %d after 10 s", rp, base)
		}
		time.Sleep(time.Millisecond)
	}
	if res, err := l.Compact(ctx, o); err != nil || !res.Ran || res.Segments == 0 {
		t.Fatalf("pass after a flush: %+v, %v", res, err)
	}
	checkCompaction(t, l, m, l.active().base, true, false)
}

// A delete.retention.ms or min.compaction.lag.ms of centuries keeps
// tombstones, and everything, rather than wrapping around.
func TestCompactWithHugeDurations(t *testing.T) {
	if got := msBefore(time.UnixMilli(1000), math.MaxInt64); got != 1000-math.MaxInt64/int64(time.Millisecond) {
		t.Fatalf("msBefore of the longest duration: %d", got)
	}
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	tombstoneLog(t, l, m, 1000)
	for i := 0; i < 3; i++ {
		res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), DeleteRetention: math.MaxInt64, Now: time.UnixMilli(2000)})
		if err != nil || res.TombstonesRemoved != 0 {
			t.Fatalf("pass %d: %+v, %v", i, res, err)
		}
		fillAndRoll(t, l, m, 1000)
	}
	res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), MinLag: math.MaxInt64, Now: time.UnixMilli(2000)})
	if err != nil || res.Ran {
		t.Fatalf("pass with the longest lag: %+v, %v", res, err)
	}
	checkCompaction(t, l, m, l.active().base, false, false)
}

// A truncation that cuts into a segment a pass is about to swap (only an
// unclean leader election truncates below the HW) wins: the pass leaves the
// cut segment as it is, rather than bringing back the records cut.
func TestCompactLosesARaceWithTruncation(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	m := &compactModel{recs: map[int64]keyed{}}
	randomLoad(t, l, m, rand.New(rand.NewPCG(6, 6)), 200, 8, CodecNone, 1000)
	cut := l.Segments()[1] - 3 // inside the first segment
	l.compactSwapHook = func() {
		l.compactSwapHook = nil
		var err error
		if cut, err = l.TruncateTo(ctx, cut); err != nil {
			t.Error(err)
		}
	}
	if _, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(2000)}); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != cut {
		t.Fatalf("log end %d after a truncation to %d", l.LogEndOffset(), cut)
	}
	for off := range m.recs {
		if off >= cut {
			delete(m.recs, off)
		}
	}
	m.leo = cut
	checkCompaction(t, l, m, 0, false, false) // nothing compacted, nothing back
	// The pass's point stops at the cut: what is written from there on is
	// dirty (compaction_point.go).
	if off, ok, err := readOffsetCheckpoint(fs, "/p/"+cleanerPointFile); err != nil || !ok || off > cut {
		t.Fatalf("cleaner point %d (present %v, %v) after a pass cut at %d", off, ok, err, cut)
	}
}
