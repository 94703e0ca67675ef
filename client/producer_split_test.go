package client

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
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
		pp.append(r, 1_800_000_000_000+int64(i), recordSize(r), uint64(i/20), deliveryFunc(func(d Delivery) { called = append(called, i) }))
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

// A batch its leader refused as too large, encoded and sent, is split in its
// own place: the pieces take its identity, its order and its sequence range
// (base, base+n1, ...) and are encoded in the producer's codec; the batches
// encoded after it (queued or in flight) move up in order and keep their
// sequences; the pieces carry on its attempts and whether it may have been
// written. Packed to the limit the metadata shows when that explains the
// refusal; in halves when it does not.
func TestSplitRefusedBatchInPlace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int // in the metadata; 0: none
		min   int // pieces at least
		max   int // and at most
	}{
		{"to the limit in the metadata", 2048, 20 * 340 / 2048, 20},
		{"in halves without a limit that explains it", 0, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Producer{c: &Client{meta: &metadata{}, log: testLogger(t)},
				cfg: ProducerConfig{BufferBytes: 10 << 20, BatchBytes: 1 << 20, MaxInFlight: 5, Linger: 1 << 40, Compression: segment.CodecZstd}}
			if tc.limit > 0 {
				p.c.meta.snap.Store(&snapshot{maxBytes: map[string]int{"t": tc.limit}})
			}
			pp := newPartProducer(p, "t", 0)
			pp.havePID, pp.id, pp.nextSeq, pp.order = true, producerIdentity{pid: 7, epoch: 2}, 100, 40
			var called []int
			fill := func(from, n int) *pbatch {
				b := newBatch(nil, 8192, 1<<20, 8, time.Now(), time.Minute)
				for i := from; i < from+n; i++ {
					r := &Record{Key: []byte(fmt.Sprint("k", i)), Value: bytes.Repeat([]byte(fmt.Sprint(i%10)), 300)}
					b.add(r, int64(i), recordSize(r), 0, deliveryFunc(func(Delivery) { called = append(called, i) }))
				}
				pp.encode(b)
				return b
			}
			b, inflight, queued := fill(0, 20), fill(20, 5), fill(25, 5)
			b.tooLarge, b.attempts, b.unknown = true, 2, true
			pp.inflight = []*pbatch{inflight}
			pp.queue = []*pbatch{b, queued}
			pieces := pp.splitForLimit(b)
			if len(pieces) < tc.min || len(pieces) > tc.max {
				t.Fatalf("%d pieces, want %d to %d", len(pieces), tc.min, tc.max)
			}
			seq, recs := int32(100), 0
			for i, nb := range pieces {
				h, err := segment.ParseHeader(nb.encoded)
				if err != nil {
					t.Fatal(err)
				}
				if h.ProducerID != 7 || h.ProducerEpoch != 2 || h.BaseSequence != seq || nb.id != pp.id || nb.order != 40+int64(i) {
					t.Fatalf("piece %d: producer %d epoch %d sequence %d order %d, want 7, 2, %d, %d", i, h.ProducerID, h.ProducerEpoch, h.BaseSequence, nb.order, seq, 40+i)
				}
				if c := nb.encoded.Compression(); c != segment.CodecZstd {
					t.Fatalf("piece %d encoded in %v, want the producer's zstd", i, c)
				}
				if tc.limit > 0 && nb.bld.Size() > tc.limit {
					t.Fatalf("piece %d: %d bytes uncompressed, limit %d", i, nb.bld.Size(), tc.limit)
				}
				if !nb.unknown || nb.attempts != 2 || nb.tooLarge || nb.deadline != b.deadline {
					t.Fatalf("piece %d: unknown %v, attempts %d, tooLarge %v", i, nb.unknown, nb.attempts, nb.tooLarge)
				}
				seq += h.RecordCount
				recs += nb.records()
				nb.deliver("t", 0, 0, nil)
			}
			if recs != 20 {
				t.Fatalf("%d records in the pieces, want 20", recs)
			}
			k := int64(len(pieces))
			if inflight.order != 40+k || queued.order != 41+k || pp.order != 42+k {
				t.Fatalf("orders after the split: in flight %d, queued %d, next %d; want %d, %d, %d", inflight.order, queued.order, pp.order, 40+k, 41+k, 42+k)
			}
			for _, x := range []*pbatch{inflight, queued} {
				if h, _ := segment.ParseHeader(x.encoded); h.BaseSequence != seq {
					t.Fatalf("a later batch's sequence moved to %d, want %d", h.BaseSequence, seq)
				}
				seq += 5
			}
			for i, c := range called {
				if c != i {
					t.Fatalf("callbacks %v, want records 0 to 19 in order", called)
				}
			}
			if len(called) != 20 || b.cbs != nil || p.stats.splits.Load() != 1 {
				t.Fatalf("%d callbacks, the refused batch keeps %d, %d splits counted", len(called), len(b.cbs), p.stats.splits.Load())
			}
		})
	}
}

// splitValue is the value of record i in the split tests ("v<i>", what
// checkExactlyOnce reads); splitRecord pads it with a compressible header
// of pad bytes.
func splitValue(i int) []byte { return []byte(fmt.Sprintf("v%d", i)) }

func splitRecord(i, pad int) *Record {
	return &Record{Topic: "t", PartitionSet: true, Value: splitValue(i),
		Headers: []segment.RecordHeader{{Key: "pad", Value: bytes.Repeat([]byte{byte('a' + i%3)}, pad)}}}
}

// storedSize is the size a leader storing b uncompressed (a topic's
// compression.type=uncompressed) checks against the limit.
func storedSize(tb testing.TB, b []byte) int {
	out, err := segment.Batch(b).Recompress(segment.CodecNone)
	if err != nil {
		tb.Errorf("a produced batch does not decompress: %v", err)
		return 0
	}
	return len(out)
}

// refuseStoredAbove makes fc's leaders refuse, with RecordTooLarge, every
// produce batch that stored uncompressed is larger than limit, without the
// metadata showing a limit (as the leader of an uncompressed topic refuses
// a compressed batch that fitted as sent), after delay; first, when not
// Pass, is the fate of the first request carrying the partition's first
// batch (sequence 0 of an idempotent producer's first epoch), whatever
// its size. It returns the codecs of the batches sent, in order.
func refuseStoredAbove(tb testing.TB, fc *clienttest.Cluster, limit int, delay time.Duration, first clienttest.Kind) func() []segment.Codec {
	var mu sync.Mutex
	var codecs []segment.Codec
	firstSeen := false
	fc.SetIntercept(func(_ string, t quic.FrameType, req any) clienttest.Action {
		if t != wire.TypeProduce {
			return clienttest.Action{}
		}
		b := req.(*wire.ProduceRequest).Parts[0].Batch
		mu.Lock()
		defer mu.Unlock()
		codecs = append(codecs, segment.Batch(b).Compression())
		if h, err := segment.ParseHeader(b); err == nil && h.ProducerEpoch == 0 && h.BaseSequence == 0 && !firstSeen && first != clienttest.Pass {
			firstSeen = true
			return clienttest.Action{Kind: first, Delay: delay}
		}
		if storedSize(tb, b) > limit {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.RecordTooLarge, Delay: delay}
		}
		return clienttest.Action{Delay: delay}
	})
	return func() []segment.Codec {
		mu.Lock()
		defer mu.Unlock()
		return append([]segment.Codec(nil), codecs...)
	}
}

// Batches built under no limit (64 KiB of records each), sent, and refused
// by their leader as larger than the topic takes, are split and resent:
// every record is written exactly once, in produce order, at the offset its
// delivery reports, with up to 5 requests in flight (each answer delayed
// 20 ms, so that later batches are in flight when one is refused) and
// idempotence, or without it and one request in flight (MaxInFlight 1 is
// what keeps order then). The limit is either lowered where the metadata
// shows it (the pieces packed to it), or one the metadata does not show (a
// topic storing batches uncompressed; the pieces halved until they fit),
// and compressed pieces are sent compressed.
func TestProducerSplitsRefusedBatches(t *testing.T) {
	for _, tc := range []struct {
		name     string
		idem     bool
		inFlight int
		hidden   bool // the limit is not in the metadata: stored size checked
		codec    segment.Codec
	}{
		{"idempotent, limit in the metadata", true, 5, false, segment.CodecNone},
		{"not idempotent, limit in the metadata", false, 1, false, segment.CodecNone},
		{"idempotent, zstd stored uncompressed", true, 5, true, segment.CodecZstd},
		{"not idempotent, zstd stored uncompressed", false, 1, true, segment.CodecZstd},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const limit, n = 4096, 800
			fc := clienttest.New(1)
			fc.CreateTopic("t", 1)
			c := refreshedFakeClient(t, fc) // knows no limit
			var codecs func() []segment.Codec
			if tc.hidden {
				codecs = refuseStoredAbove(t, fc, limit, 20*time.Millisecond, clienttest.Pass)
			} else {
				fc.SetMaxMessageBytes("t", limit)
				fc.InterceptProduce(clienttest.Action{Delay: 20 * time.Millisecond})
			}
			p, err := c.NewProducer(ProducerConfig{DisableIdempotence: !tc.idem, MaxInFlight: tc.inFlight, Linger: 50 * time.Millisecond,
				Compression: tc.codec})
			if err != nil {
				t.Fatal(err)
			}
			d := produceSplitRecords(t, p, n, 300)
			checkExactlyOnce(t, fc, "t", 1, d, n)
			st := p.Stats()
			if st.Splits == 0 || st.FailedRequests == 0 {
				t.Fatalf("%d splits, %d failed requests: no batch was refused and split", st.Splits, st.FailedRequests)
			}
			if codecs != nil {
				for i, cd := range codecs() {
					if cd != tc.codec {
						t.Fatalf("batch %d sent in %v, want %v", i, cd, tc.codec)
					}
				}
			}
		})
	}
}

// A record refused alone (a batch of it alone stored larger than the topic
// takes) fails with a RecordTooLargeError naming the topic and carrying the
// leader's refusal; only it fails, and every other record of its batch and
// the later ones is written exactly once, in order.
func TestProducerSplitFailsOnlyTheRecordTooLargeAlone(t *testing.T) {
	for _, idem := range []bool{true, false} {
		t.Run(fmt.Sprint("idempotent=", idem), func(t *testing.T) {
			const limit, n, big = 4096, 300, 137
			fc := clienttest.New(1)
			fc.CreateTopic("t", 1)
			c := refreshedFakeClient(t, fc)
			refuseStoredAbove(t, fc, limit, 0, clienttest.Pass)
			inFlight := 5
			if !idem {
				inFlight = 1
			}
			p, err := c.NewProducer(ProducerConfig{DisableIdempotence: !idem, MaxInFlight: inFlight, Linger: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			d := newDeliveries()
			for i := range n {
				pad := 300
				if i == big {
					pad = 2 * limit
				}
				if err := p.Produce(ctx, splitRecord(i, pad), d.cb(i)); err != nil {
					t.Fatal(err)
				}
			}
			if err := p.Close(ctx); err != nil {
				t.Fatal(err)
			}
			d.mu.Lock()
			got := d.got[big]
			var tooLarge *RecordTooLargeError
			if d.n[big] != 1 || !errors.As(got.Err, &tooLarge) || tooLarge.Topic != "t" || ErrorCode(got.Err) != wire.RecordTooLarge ||
				!strings.Contains(got.Err.Error(), "topic t") {
				t.Fatalf("the record too large alone: %d callbacks, %v", d.n[big], got.Err)
			}
			delete(d.got, big)
			delete(d.n, big)
			d.mu.Unlock()
			// The others, renumbered past the one that failed.
			rest := newDeliveries()
			for i := range n - 1 {
				j := i
				if i >= big {
					j++
				}
				rest.got[i], rest.n[i] = d.got[j], d.n[j]
			}
			stored := fc.Records("t", 0)
			for k := range stored {
				var j int
				fmt.Sscanf(string(stored[k].Value), "v%d", &j)
				if j == big {
					t.Fatalf("the record too large alone was written at %d", stored[k].Offset)
				}
			}
			checkStoredInOrder(t, stored, rest, n-1, func(j int) int {
				if j > big {
					return j - 1
				}
				return j
			})
		})
	}
}

// checkStoredInOrder checks that stored holds records 0 to n-1 of d, as
// index maps a stored value's number to its record, once each at
// consecutive offsets in order, each at the offset its delivery reported.
func checkStoredInOrder(tb testing.TB, stored []clienttest.Stored, d *deliveries, n int, index func(int) int) {
	tb.Helper()
	if len(stored) != n {
		tb.Fatalf("the log holds %d records, want %d", len(stored), n)
	}
	for k, s := range stored {
		var j int
		fmt.Sscanf(string(s.Value), "v%d", &j)
		i := index(j)
		x := d.got[i]
		if s.Offset != int64(k) || i != k || d.n[i] != 1 || x.Err != nil || x.Offset != s.Offset {
			tb.Fatalf("offset %d holds record %d (of %d callbacks, acknowledged at %d, %v): want record %d", s.Offset, i, d.n[i], x.Offset, x.Err, k)
		}
	}
}

// A batch whose first attempt was written but its answer lost, refused as
// too large when resent (a leader checks the size before the sequence), is
// split all the same: with idempotence the leader finds each piece a retry
// of part of the batch it has and answers with that part's offsets, so
// every record is written once and acknowledged at its offset.
func TestProducerSplitsABatchThatMayHaveBeenWritten(t *testing.T) {
	const limit, n = 4096, 400
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	refuseStoredAbove(t, fc, limit, 0, clienttest.DropResponse)
	p, err := c.NewProducer(ProducerConfig{Linger: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d := produceSplitRecords(t, p, n, 300)
	checkExactlyOnce(t, fc, "t", 1, d, n)
	if st := p.Stats(); st.Splits == 0 {
		t.Fatal("nothing was split")
	}
	if fc.LogEnd("t", 0) != n {
		t.Fatalf("log end %d, want %d", fc.LogEnd("t", 0), n)
	}
}

// produceSplitRecords produces records 0..n-1 of pad bytes each
// (splitRecord) and closes p, which waits for their deliveries.
func produceSplitRecords(t *testing.T, p *Producer, n, pad int) *deliveries {
	t.Helper()
	ctx := testCtx(t)
	d := newDeliveries()
	for i := range n {
		if err := p.Produce(ctx, splitRecord(i, pad), d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}
