package client

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/segment"
)

// A batch built before its topic's limit was lowered, and not sent yet, is
// split into batches within the new limit: the records in order with their
// keys (null and empty kept apart), values (a tombstone too), headers,
// timestamps, callbacks and budget generations; the budget bytes add up to
// the old batch's. A batch that fits, or holds one record, is not split.
func TestSplitForLimit(t *testing.T) {
	p := &Producer{c: &Client{meta: &metadata{}, log: testLogger(t)},
		cfg: ProducerConfig{BufferBytes: 10 << 20, BatchBytes: 1 << 20, MaxInFlight: 5, Linger: 1 << 40}}
	pp := newPartProducer(p, "t", 0)
	var called []int
	const n = 60
	for i := range n {
		r := &Record{Topic: "t", Key: []byte(fmt.Sprint("k", i)), Value: bytes.Repeat([]byte{'v'}, 200)}
		switch i {
		case 7:
			r.Key, r.Value = nil, nil // no key, a tombstone
		case 8:
			r.Key, r.Value = []byte{}, []byte{}
		case 9:
			r.Headers = []segment.RecordHeader{{Key: "trace", Value: []byte("abc")}, {Key: "n"}}
		}
		pp.append(r, 1_800_000_000_000+int64(i), recordSize(r), uint64(i/20), func(d Delivery) { called = append(called, i) })
	}
	b := pp.mu.open
	if b == nil || b.records() != n {
		t.Fatal("want one open batch of every record")
	}
	if parts := pp.splitForLimit(b); parts != nil {
		t.Fatal("split without a limit")
	}
	p.c.meta.snap.Store(&snapshot{maxBytes: map[string]int{"t": 2048}})
	want := segment.Batch(b.bld.Build())
	wantBudget, wantGens := b.budgetBytes(), map[uint64]int64{}
	for _, g := range b.gens {
		wantGens[g.gen] += g.n
	}
	parts := pp.splitForLimit(b)
	if len(parts) < n*240/2048 {
		t.Fatalf("%d batches", len(parts))
	}
	var got []segment.Record
	var budget int64
	gotGens := map[uint64]int64{}
	for _, nb := range parts {
		enc := nb.bld.Build()
		if len(enc) > 2048 {
			t.Fatalf("a batch of %d bytes, limit 2048", len(enc))
		}
		it := enc.Iter()
		for it.Next() {
			r := it.Record()
			got = append(got, segment.Record{Timestamp: r.Timestamp, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value),
				Headers: append([]segment.RecordHeader(nil), r.Headers...)})
		}
		budget += nb.budgetBytes()
		for _, g := range nb.gens {
			gotGens[g.gen] += g.n
		}
		nb.deliver("t", 0, 0, nil)
	}
	it := want.Iter()
	for i := 0; it.Next(); i++ {
		w := it.Record()
		g := got[i]
		if g.Timestamp != w.Timestamp || !bytes.Equal(g.Key, w.Key) || (g.Key == nil) != (w.Key == nil) ||
			!bytes.Equal(g.Value, w.Value) || (g.Value == nil) != (w.Value == nil) || len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
	}
	if len(got) != n || budget != wantBudget || fmt.Sprint(gotGens) != fmt.Sprint(wantGens) {
		t.Fatalf("%d records, budget %d (want %d), generations %v (want %v)", len(got), budget, wantBudget, gotGens, wantGens)
	}
	for i, c := range called {
		if c != i {
			t.Fatalf("callbacks in order %v", called)
		}
	}

	one := newBatch(nil, 4096, 1<<20, 8, b.created, 0)
	r := &Record{Topic: "t", Value: make([]byte, 4000)}
	one.add(r, 0, recordSize(r), 0, nil)
	if pp.splitForLimit(one) != nil {
		t.Fatal("a batch of one record split")
	}
}

// Through the producer: a batch filled under no limit, still lingering when
// the metadata shows a lower one, goes out in batches within it, and every
// record is written once, in order (the fake cluster checks sequences).
func TestProducerSplitsAnUnsentBatch(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	d := newDeliveries()
	const n = 60
	for i := range n {
		r := &Record{Topic: "t", PartitionSet: true, Value: []byte(fmt.Sprintf("v%d", i))}
		r.Headers = []segment.RecordHeader{{Key: "pad", Value: bytes.Repeat([]byte{'p'}, 200)}}
		if err := p.Produce(ctx, r, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	s := *c.meta.current()
	s.maxBytes = map[string]int{"t": 2048}
	c.meta.snap.Store(&s)
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, fc, "t", 1, d, n)
	if st := p.Stats(); st.Batches < n*260/2048 {
		t.Fatalf("%d batches sent for %d records of about 260 bytes under a 2048-byte limit", st.Batches, n)
	}
}
