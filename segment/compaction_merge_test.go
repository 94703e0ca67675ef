package segment

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// offsetFacts is what the headers say of one offset: its batch's leader
// epoch and producer, and its sequence number.
type offsetFacts struct {
	epoch      int32
	pid        int64
	pepoch     int16
	seq        int64 // -1: none
	compressed bool
}

// headerFacts returns, per offset, what the log's batch headers say.
func headerFacts(t *testing.T, l *Log) (map[int64]offsetFacts, []Header) {
	t.Helper()
	out := map[int64]offsetFacts{}
	var hs []Header
	for _, b := range readAll(t, l, l.LogStartOffset()) {
		h, err := ParseHeader(b)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		for o := h.BaseOffset; o <= h.LastOffset(); o++ {
			f := offsetFacts{epoch: h.LeaderEpoch, pid: h.ProducerID, pepoch: h.ProducerEpoch, seq: -1}
			if h.ProducerID >= 0 {
				f.seq = int64(h.BaseSequence) + o - h.BaseOffset
			}
			out[o] = f
		}
	}
	return out, hs
}

// Batches a pass leaves empty are merged into runs: each offset keeps its
// leader epoch, producer and sequence number as the headers say them (the
// merged batch is one the producer might have written), runs never cross
// a leader epoch, a producer or a gap in its sequence numbers, and no two
// neighbouring empty batches are left that could be one. Records, offsets,
// recovery and a second pass are as before; the log is much smaller.
func TestCompactMergesEmptyBatches(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", compactOpts(fs))
	m := &compactModel{recs: map[int64]keyed{}}
	rng := rand.New(rand.NewPCG(11, 12))
	seqs := map[int64]int32{}
	const n = 600
	for i := range n {
		epoch := int32(i / 200)                     // three leader epochs
		pid := []int64{-1, 7, 7, 7, 9}[rng.IntN(5)] // a main producer, another, and batches of none
		opts := BuilderOptions{ProducerID: pid, ProducerEpoch: 0, BaseSequence: -1}
		if pid >= 0 {
			opts.BaseSequence = seqs[pid]
		}
		if i == 450 && pid == 7 {
			opts.ProducerEpoch = 1 // (a new producer epoch restarts at 0)
		}
		b := NewBuilder(opts)
		k := 1 + rng.IntN(2)
		recs := make([]keyed, k)
		for j := range recs {
			recs[j] = keyed{key: fmt.Appendf(nil, "acct-%d", rng.IntN(4)), value: []byte(`{"balance":100}`), ts: int64(1000 + i)}
			b.Add(recs[j].ts, recs[j].key, recs[j].value, nil)
		}
		info := mustAppend(t, l, b.Build(), epoch)
		for j, r := range recs {
			m.recs[info.BaseOffset+int64(j)] = r
		}
		m.leo = info.LastOffset + 1
		if pid >= 0 {
			seqs[pid] += int32(k)
		}
	}
	before, hsBefore := headerFacts(t, l)
	size := l.Size()
	res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(5000)})
	if err != nil || !res.Ran || res.BatchesMerged == 0 {
		t.Fatalf("pass: %+v, %v", res, err)
	}
	check := func(what string) {
		t.Helper()
		checkCompaction(t, l, m, l.active().base, true, false)
		after, hs := headerFacts(t, l)
		for o, f := range before {
			if g := after[o]; g.epoch != f.epoch || g.pid != f.pid || g.pepoch != f.pepoch || g.seq != f.seq {
				t.Fatalf("%s: offset %d: headers say %+v, were %+v", what, o, g, f)
			}
		}
		bases := map[int64]bool{}
		for _, s := range l.Segments() {
			bases[s] = true // runs do not cross segments
		}
		for i := 1; i < len(hs); i++ {
			if hs[i-1].RecordCount != 0 || hs[i].RecordCount != 0 || bases[hs[i].BaseOffset] || hs[i].BaseOffset >= l.active().base {
				continue
			}
			if r := (emptyRun{n: 1, first: hs[i-1], last: hs[i-1]}); r.accepts(hs[i]) {
				t.Fatalf("%s: empty batches at %d and %d could be one", what, hs[i-1].BaseOffset, hs[i].BaseOffset)
			}
		}
		t.Logf("%s: %d batches (%d before), %d bytes (%d before)", what, len(hs), len(hsBefore), l.Size(), size)
	}
	check("after a pass")
	// A second pass over the same log merges nothing more.
	if res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(5000)}); err != nil || res.BatchesMerged != 0 {
		t.Fatalf("second pass: %+v, %v", res, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/p", compactOpts(fs))
	defer l.Close()
	check("reopened")
	if _, err := scrubAll(t, l, 1<<20); err != nil { // merged empty batches are sound (scrub.go)
		t.Fatalf("scrub: %v", err)
	}
}

// TrimEmptyBatch: a fetch from inside a merged empty batch gets the rest of
// it, which a log ending there appends, with the sequence numbers of its
// offsets and the batches after it as they were; anything else is left.
func TestTrimEmptyBatch(t *testing.T) {
	l := mustOpen(t, "/p", compactOpts(NewMemFS()))
	defer l.Close()
	var batches []Batch
	for seq := range 12 {
		b := NewBuilder(BuilderOptions{ProducerID: 3, BaseSequence: int32(seq)})
		b.Add(int64(1000+seq), []byte("k"), []byte("v"), nil)
		batches = append(batches, append(Batch(nil), b.Build()...))
		mustAppend(t, l, batches[seq], 4)
	}
	for l.active().base == 0 { // seal the segment
		fill := NewBuilder(BuilderOptions{})
		fill.Add(1, []byte("x"), make([]byte, 2000), nil)
		mustAppend(t, l, fill.Build(), 4)
	}
	if res, err := l.Compact(ctx, CompactOptions{Below: l.LogEndOffset(), Now: time.UnixMilli(5000)}); err != nil || res.BatchesMerged != 10 {
		t.Fatalf("pass: %+v, %v", res, err) // offsets 0-10 empty and merged; 11, the latest of k, stays
	}
	v, err := l.Read(4, 1<<20, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Release()
	trimmed := TrimEmptyBatch(v.Data, 4)
	h, err := ParseHeader(trimmed)
	if err != nil || Batch(trimmed).Validate() != nil {
		t.Fatalf("trimmed: %v", err)
	}
	if h.BaseOffset != 4 || h.LastOffset() != 10 || h.BaseSequence != 4 || h.ProducerID != 3 || h.LeaderEpoch != 4 || h.RecordCount != 0 || !h.Compacted() {
		t.Fatalf("trimmed header %+v", h)
	}
	// A log holding offsets 0-3 as first written takes it, and the rest.
	f := mustOpen(t, "/f", compactOpts(NewMemFS()))
	defer f.Close()
	for _, b := range batches[:4] {
		if _, err := f.AppendVerbatim(ctx, stamped(b, f.LogEndOffset(), 4)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.AppendVerbatim(ctx, trimmed); err != nil {
		t.Fatalf("appending the trimmed batches: %v", err)
	}
	var end int64
	if _, err := SplitBatches(v.Data, func(b Batch) error { end = b.LastOffset() + 1; return nil }); err != nil {
		t.Fatal(err)
	}
	if f.LogEndOffset() != end {
		t.Fatalf("log end %d, want %d (after the batches read)", f.LogEndOffset(), end)
	}
	fl, _ := headerFacts(t, f)
	ll, _ := headerFacts(t, l)
	for o := int64(0); o < end; o++ {
		if fl[o] != ll[o] {
			t.Fatalf("offset %d: %+v, the cleaned log's %+v", o, fl[o], ll[o])
		}
	}
	// Left as they are: a fetch at a batch's start, a batch with records,
	// a partial first batch.
	for _, from := range []int64{0, 11} {
		w, err := l.Read(from, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		if got := TrimEmptyBatch(w.Data, from); &got[0] != &w.Data[0] {
			t.Errorf("from %d: trimmed", from)
		}
		w.Release()
	}
	if got := TrimEmptyBatch(v.Data[:30], 4); len(got) != 30 {
		t.Error("trimmed a partial batch")
	}
}

// stamped returns a copy of b at base offset base and leader epoch epoch.
func stamped(b Batch, base int64, epoch int32) Batch {
	out := append(Batch(nil), b...)
	out.SetBaseOffset(base)
	out.SetLeaderEpoch(epoch)
	return out
}
