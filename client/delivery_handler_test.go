package client

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
)

// handlerRecord is a DeliveryHandler per record, handed out from one slice
// as the bench does.
type handlerRecord struct {
	d *deliveries
	i int
}

func (h *handlerRecord) Delivered(x Delivery) { h.d.cb(h.i)(x) }

// ProduceTo gives every record's outcome to its handler exactly once, a nil
// handler is allowed, and the caller may reuse the Record and its value's
// bytes as soon as the call returns: the stored values are the ones given.
func TestProduceToDeliversToHandlersAndKeepsNoRecord(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 3)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 2048, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	const n = 600
	d := newDeliveries()
	handlers := make([]handlerRecord, n)
	var rec Record
	buf := make([]byte, 0, 16)
	for i := 0; i < n; i++ {
		buf = fmt.Appendf(buf[:0], "v%d", i)
		rec = Record{Topic: "t", Value: buf}
		var h DeliveryHandler // nil for one in ten: recorded by hand after Close
		if i%10 != 9 {
			handlers[i] = handlerRecord{d: d, i: i}
			h = &handlers[i]
		}
		if err := p.ProduceTo(ctx, &rec, h); err != nil {
			t.Fatal(err)
		}
		copy(buf, "xxxxxxxx") // the caller reuses its bytes at once
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Every record is stored with its own value; those produced without a
	// handler are found by value and given their place for the check.
	for part := int32(0); part < 3; part++ {
		for _, s := range fc.Records("t", part) {
			var i int
			if _, err := fmt.Sscanf(string(s.Value), "v%d", &i); err != nil {
				t.Fatalf("partition %d offset %d holds %q: the caller's reused bytes were stored", part, s.Offset, s.Value)
			}
			if i%10 == 9 {
				d.cb(i)(Delivery{Topic: "t", Partition: part, Offset: s.Offset})
			}
		}
	}
	checkExactlyOnce(t, fc, "t", 3, d, n)
}

// countHandler counts deliveries; one per record, from a slice.
type countHandler struct{ n *atomic.Int64 }

func (h *countHandler) Delivered(Delivery) { h.n.Add(1) }

// BenchmarkProduceCallbacks is the producer's cost per 1 KiB record
// against the in-process fake cluster (no QUIC, no disk), with a closure
// per record (Produce) and with handlers allocated 1024 at a time
// (ProduceTo), as the bench's load does. Compare ns/op and allocs/op of
// the two in the same run.
func BenchmarkProduceCallbacks(b *testing.B) {
	value := make([]byte, 1024)
	for _, mode := range []string{"closure", "handler"} {
		b.Run(mode, func(b *testing.B) {
			fc := clienttest.New(1)
			fc.CreateTopic("t", 6)
			c := mustFakeClient(b, fc)
			p, err := c.NewProducer(ProducerConfig{})
			if err != nil {
				b.Fatal(err)
			}
			ctx := testCtx(b)
			var delivered atomic.Int64
			var slab []countHandler
			b.SetBytes(int64(len(value)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rec := Record{Topic: "t", Value: value}
				if mode == "closure" {
					// The same work as countHandler; capturing delivered
					// makes the literal a closure allocated per record.
					err = p.Produce(ctx, &rec, func(Delivery) { delivered.Add(1) })
				} else {
					if len(slab) == 0 {
						slab = make([]countHandler, 1024)
					}
					h := &slab[0]
					slab = slab[1:]
					h.n = &delivered
					err = p.ProduceTo(ctx, &rec, h)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			if err := p.Close(ctx); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if delivered.Load() != int64(b.N) {
				b.Fatalf("%d of %d delivered", delivered.Load(), b.N)
			}
		})
	}
}
