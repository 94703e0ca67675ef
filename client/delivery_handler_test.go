package client

import (
	"fmt"
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
		var h DeliveryHandler
		if i%10 == 9 {
			// nil: the outcome is not reported; recorded here by hand after Close.
		} else {
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
