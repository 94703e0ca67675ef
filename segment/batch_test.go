package segment

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestBuilderIteratorRoundTrip(t *testing.T) {
	b := NewBuilder(BuilderOptions{ProducerID: 7, ProducerEpoch: 2, BaseSequence: 40})
	hdrs := []RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "n", Value: nil}}
	b.Add(1000, []byte("k0"), []byte("v0"), hdrs)
	b.Add(999, nil, []byte{}, nil)
	b.Add(1005, []byte{}, nil, hdrs[:1])
	batch := b.Build()
	if err := batch.Validate(); err != nil {
		t.Fatal(err)
	}
	batch.SetBaseOffset(100)
	batch.SetLeaderEpoch(3)
	if err := batch.Validate(); err != nil {
		t.Fatalf("stamping broke the CRC: %v", err)
	}
	h, err := ParseHeader(batch)
	if err != nil {
		t.Fatal(err)
	}
	want := Header{BaseOffset: 100, Length: int32(len(batch) - 12), LeaderEpoch: 3, Magic: FormatVersion, CRC: h.CRC,
		LastOffsetDelta: 2, FirstTimestamp: 1000, MaxTimestamp: 1005, ProducerID: 7, ProducerEpoch: 2,
		BaseSequence: 40, RecordCount: 3}
	if h != want {
		t.Fatalf("header %+v\nwant   %+v", h, want)
	}
	it := batch.Iter()
	var recs []Record
	for it.Next() {
		r := it.Record()
		r.Headers = append([]RecordHeader(nil), r.Headers...)
		recs = append(recs, r)
	}
	if err := it.Err(); err != nil || len(recs) != 3 {
		t.Fatalf("iterated %d records, err %v", len(recs), err)
	}
	if recs[0].Offset != 100 || recs[2].Offset != 102 || recs[1].Timestamp != 999 || recs[2].Timestamp != 1005 {
		t.Fatalf("offsets/timestamps wrong: %+v", recs)
	}
	if string(recs[0].Key) != "k0" || recs[1].Key != nil || recs[2].Key == nil || len(recs[2].Key) != 0 {
		t.Fatalf("keys wrong: %q %q %q", recs[0].Key, recs[1].Key, recs[2].Key)
	}
	if recs[1].Value == nil || recs[2].Value != nil {
		t.Fatalf("null/empty values wrong")
	}
	if len(recs[0].Headers) != 2 || recs[0].Headers[0].Key != "trace" || string(recs[0].Headers[0].Value) != "abc" || recs[0].Headers[1].Value != nil {
		t.Fatalf("headers wrong: %+v", recs[0].Headers)
	}
	// A built batch survives Reset and reuse of the builder.
	saved := append(Batch(nil), batch...)
	b.Reset(BuilderOptions{})
	b.Add(1, []byte("x"), []byte("y"), nil)
	b2 := b.Build()
	if !bytes.Equal(saved, batch) {
		t.Fatal("Reset modified an earlier batch")
	}
	if h2, _ := ParseHeader(b2); h2.ProducerID != -1 || h2.BaseSequence != -1 || h2.ProducerEpoch != -1 {
		t.Fatalf("non-idempotent batch header %+v", h2)
	}
}

func TestBuilderSetOptionsRestampsAndRecycleReuses(t *testing.T) {
	b := NewBuilder(BuilderOptions{})
	b.Add(10, []byte("k"), []byte("v1"), nil)
	b.Add(12, nil, []byte("v2"), []RecordHeader{{Key: "h", Value: []byte("x")}})
	b.SetOptions(BuilderOptions{ProducerID: 5, ProducerEpoch: 1, BaseSequence: 7})
	first := b.Build()
	b.SetOptions(BuilderOptions{ProducerID: 9, ProducerEpoch: 0, BaseSequence: 0})
	second := b.Build()
	if err := second.Validate(); err != nil {
		t.Fatal(err)
	}
	h, _ := ParseHeader(second)
	if h.ProducerID != 9 || h.BaseSequence != 0 || h.RecordCount != 2 || h.FirstTimestamp != 10 || h.MaxTimestamp != 12 {
		t.Fatalf("re-stamped header %+v", h)
	}
	if &first[0] != &second[0] {
		t.Fatal("a second Build after SetOptions should re-stamp the same bytes")
	}
	want := append(Batch(nil), second...)
	b.Recycle(BuilderOptions{}, 0)
	if &b.buf[0] != &second[0] {
		t.Fatal("Recycle did not reuse the buffer")
	}
	b.Add(10, []byte("k"), []byte("v1"), nil)
	b.Add(12, nil, []byte("v2"), []RecordHeader{{Key: "h", Value: []byte("x")}})
	b.SetOptions(BuilderOptions{ProducerID: 9, ProducerEpoch: 0, BaseSequence: 0})
	if got := b.Build(); !bytes.Equal(got, want) {
		t.Fatal("a recycled builder built different bytes")
	}
	b.Recycle(BuilderOptions{}, 1<<20)
	if b.Cap() < 1<<20 || b.Len() != 0 || b.Size() != HeaderSize {
		t.Fatalf("Recycle with a larger hint: cap %d len %d size %d", b.Cap(), b.Len(), b.Size())
	}
}

func TestIteratorZeroAlloc(t *testing.T) {
	b := NewBuilder(BuilderOptions{})
	for i := 0; i < 100; i++ {
		b.Add(int64(i), []byte("key"), bytes.Repeat([]byte("v"), 100), []RecordHeader{{Key: "h", Value: []byte("1")}})
	}
	batch := b.Build()
	var it Records
	it.Reset(batch)
	for it.Next() {
	}
	allocs := testing.AllocsPerRun(50, func() {
		it.Reset(batch)
		n := 0
		for it.Next() {
			n += len(it.Record().Value)
		}
		if it.Err() != nil || n != 100*100 {
			t.Fatal("bad iteration")
		}
	})
	if allocs != 0 {
		t.Fatalf("iterator allocates %.1f times per batch", allocs)
	}
}

func TestValidateAndSplit(t *testing.T) {
	var buf []byte
	for i := 0; i < 3; i++ {
		buf = append(buf, testBatch(i, 2, 0)...)
	}
	n, err := SplitBatches(buf, nil)
	if err != nil || n != len(buf) {
		t.Fatalf("split: %d %v", n, err)
	}
	if n, err := SplitBatches(buf[:len(buf)-1], nil); !errors.Is(err, ErrTornTail) || n >= len(buf) {
		t.Fatalf("torn: %d %v", n, err)
	}
	bad := append([]byte(nil), buf...)
	bad[len(bad)-1] ^= 1
	if _, err := SplitBatches(bad, nil); !IsCorruption(err) {
		t.Fatalf("flipped: %v", err)
	}
	bad = append([]byte(nil), buf...)
	bad[offMagic] = 9
	if err := Batch(bad).Validate(); !IsCorruption(err) {
		t.Fatalf("magic: %v", err)
	}
	if _, err := ParseHeader(buf[:10]); !IsCorruption(err) {
		t.Fatalf("short header: %v", err)
	}
}

func TestParseSyncPolicy(t *testing.T) {
	for in, want := range map[string]struct {
		p SyncPolicy
		d time.Duration
	}{"always": {SyncAlways, 0}, "never": {SyncNever, 0}, "interval=50ms": {SyncInterval, 50 * time.Millisecond}, "interval": {SyncInterval, DefaultSyncInterval}} {
		p, d, err := ParseSyncPolicy(in)
		if err != nil || p != want.p || d != want.d {
			t.Fatalf("%q: %v %v %v", in, p, d, err)
		}
	}
	for _, in := range []string{"", "sometimes", "interval=x", "interval=-1s"} {
		if _, _, err := ParseSyncPolicy(in); err == nil {
			t.Fatalf("%q accepted", in)
		}
	}
}

func TestEpochCache(t *testing.T) {
	var c epochCache
	c.assign(1, 0)
	c.assign(1, 5) // not newer
	c.assign(3, 10)
	c.assign(4, 20)
	if e, o := c.endOffsetFor(0, 30); e != -1 || o != -1 {
		t.Fatalf("epoch 0: %d %d", e, o)
	}
	if e, o := c.endOffsetFor(1, 30); e != 1 || o != 10 {
		t.Fatalf("epoch 1: %d %d", e, o)
	}
	if e, o := c.endOffsetFor(2, 30); e != 1 || o != 10 {
		t.Fatalf("epoch 2: %d %d", e, o)
	}
	if e, o := c.endOffsetFor(4, 30); e != 4 || o != 30 {
		t.Fatalf("epoch 4: %d %d", e, o)
	}
	if e, o := c.endOffsetFor(9, 30); e != 4 || o != 30 {
		t.Fatalf("epoch 9: %d %d", e, o)
	}
	c.truncateFromEnd(15)
	c.truncateFromStart(12)
	if got := c.clone(); len(got) != 1 || got[0] != (EpochEntry{3, 12}) {
		t.Fatalf("after truncations: %v", got)
	}
	d, err := decodeEpochCache("x", c.encode())
	if err != nil || len(d.entries) != 1 || d.entries[0] != c.entries[0] {
		t.Fatalf("decode: %v %v", d, err)
	}
}

func TestBuilderGrowthStopsAtItsLimit(t *testing.T) {
	const limit = 100_000
	b := NewBuilder(BuilderOptions{})
	b.LimitGrowth(limit)
	value := make([]byte, 1000)
	for b.Size()+1010 <= limit {
		b.Add(1, nil, value, nil)
	}
	if b.Cap() != limit {
		t.Fatalf("a batch of %d bytes grew to %d, want the limit %d", b.Size(), b.Cap(), limit)
	}
	b.Recycle(BuilderOptions{}, 0)
	b.Add(1, nil, make([]byte, 2*limit), nil) // one record larger than the limit
	if err := b.Build().Validate(); err != nil || b.Cap() < 2*limit {
		t.Fatalf("oversized record: cap %d, %v", b.Cap(), err)
	}
}

func TestBuilderGrowsByDoubling(t *testing.T) {
	b := NewBuilder(BuilderOptions{})
	value := make([]byte, 1000)
	grows, last := 0, b.Cap()
	for range 1000 { // ~1 MiB from a 4 KiB buffer
		b.Add(1, nil, value, nil)
		if c := b.Cap(); c != last {
			if c < 2*last {
				t.Fatalf("grew from %d to %d, less than double", last, c)
			}
			grows, last = grows+1, c
		}
	}
	if grows > 9 {
		t.Fatalf("%d reallocations to reach %d bytes", grows, b.Size())
	}
	batch := b.Build()
	if err := batch.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := batch.RecordCount(); got != 1000 {
		t.Fatalf("%d records, want 1000", got)
	}
}

// RecordBatchSize is exactly the size of the one-record batch Build makes.
func TestRecordBatchSize(t *testing.T) {
	big := make([]byte, 300)
	for _, c := range []struct {
		key, value []byte
		hdrs       []RecordHeader
	}{
		{nil, nil, nil},
		{[]byte{}, []byte("v"), nil},
		{[]byte("card-1"), big, []RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "n", Value: nil}}},
		{big, make([]byte, 70000), nil},
	} {
		bld := NewBuilder(BuilderOptions{})
		bld.Add(1_800_000_000_000, c.key, c.value, c.hdrs)
		if got, want := RecordBatchSize(c.key, c.value, c.hdrs), len(bld.Build()); got != want {
			t.Errorf("key %d value %d headers %d: RecordBatchSize %d, Build %d", len(c.key), len(c.value), len(c.hdrs), got, want)
		}
	}
}
