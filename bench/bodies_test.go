package bench

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"paymentlog/segment"
)

// Payment bodies are JSON of exactly the size asked, for every record size
// the bench takes (down to none at all), and hold the fields a payment
// event has where there is room for them.
func TestPaymentBodiesFitTheRecordSize(t *testing.T) {
	for _, size := range []int{0, 1, 2, 3, 17, 40, 80, 300, 1004, 4076, 16364} {
		b, err := newBodies(PayloadPayments, size)
		if err != nil {
			t.Fatal(err)
		}
		for i := range uint64(50) {
			v := b.body(i)
			if len(v) != size {
				t.Fatalf("size %d: body %d is %d bytes", size, i, len(v))
			}
			if size >= 2 && !json.Valid(v) {
				t.Fatalf("size %d: body %d is not JSON: %s", size, i, v)
			}
		}
	}
	b, _ := newBodies(PayloadPayments, 1004)
	var event struct {
		ID       string `json:"id"`
		Amount   int64  `json:"amount"`
		Currency string `json:"currency"`
		Status   string `json:"status"`
		Created  string `json:"created"`
		Merchant struct {
			ID string `json:"id"`
		} `json:"merchant"`
	}
	if err := json.Unmarshal(b.body(7), &event); err != nil || event.ID == "" || event.Amount <= 0 || event.Currency == "" ||
		event.Status == "" || event.Merchant.ID == "" {
		t.Fatalf("a 1004-byte event lacks fields: %+v (%v)\n%s", event, err, b.body(7))
	}
	if _, err := time.Parse(time.RFC3339, event.Created); err != nil {
		t.Fatalf("created %q: %v", event.Created, err)
	}
}

// Payment events vary as a stream of them does: ids never repeat, and
// currencies, statuses and merchants take several values.
func TestPaymentBodiesVary(t *testing.T) {
	b, _ := newBodies(PayloadPayments, 1004)
	ids := map[string]bool{}
	seen := map[string]map[string]bool{"currency": {}, "status": {}, "merchant": {}}
	for i := range uint64(bodyPoolMax) {
		var e struct {
			ID       string          `json:"id"`
			Currency string          `json:"currency"`
			Status   string          `json:"status"`
			Merchant json.RawMessage `json:"merchant"`
		}
		if err := json.Unmarshal(b.body(i), &e); err != nil {
			t.Fatal(err)
		}
		if ids[e.ID] {
			t.Fatalf("id %s twice", e.ID)
		}
		ids[e.ID] = true
		seen["currency"][e.Currency], seen["status"][e.Status], seen["merchant"][string(e.Merchant)] = true, true, true
	}
	for field, min := range map[string]int{"currency": 6, "status": 4, "merchant": 100} {
		if len(seen[field]) < min {
			t.Errorf("%d distinct %s values in %d events, want at least %d", len(seen[field]), field, bodyPoolMax, min)
		}
	}
	if !bytes.Equal(b.body(3), b.body(3+bodyPoolMax)) {
		t.Error("the pool does not repeat")
	}
}

// What the payloads are for: a batch of 1 KiB payment records shrinks
// under zstd and lz4 (to less than half, more than a tenth: JSON with ids
// is neither incompressible nor a constant), while a batch of random ones
// does not: only the record framing and the bench headers give a
// compressor a few percent.
func TestPayloadsCompressAsTheyShould(t *testing.T) {
	const recordSize, records = 1024, 512
	batch := func(kind string, c segment.Codec) segment.Batch {
		b, err := newBodies(kind, recordSize-payloadHeader)
		if err != nil {
			t.Fatal(err)
		}
		pl := newPayloadOf(recordSize, b, 1)
		bld := segment.NewBuilder(segment.BuilderOptions{Compression: c})
		for seq := range uint64(records) {
			bld.Add(1_700_000_000_000, nil, pl.fill(time.Unix(0, int64(seq)), 1, seq), nil)
		}
		return bld.Build()
	}
	plain := len(batch(PayloadPayments, segment.CodecNone))
	for _, c := range []segment.Codec{segment.CodecZstd, segment.CodecLZ4} {
		got := batch(PayloadPayments, c)
		ratio := float64(len(got)) / float64(plain)
		t.Logf("payments, %v: %.3f", c, ratio)
		if got.Compression() != c || ratio >= 0.5 || ratio <= 0.1 {
			t.Errorf("payments under %v: %v batch, %.3f of its uncompressed size", c, got.Compression(), ratio)
		}
		if r := batch(PayloadRandom, c); float64(len(r)) < 0.97*float64(plain) {
			t.Errorf("random under %v: %v batch of %d bytes, uncompressed %d", c, r.Compression(), len(r), plain)
		}
	}
}

// Every payload carries the bench header, whatever its body: readback and
// end-to-end latency read it.
func TestPayloadBodiesKeepTheHeader(t *testing.T) {
	for _, kind := range []string{PayloadRandom, PayloadPayments} {
		b, err := newBodies(kind, 64-payloadHeader)
		if err != nil {
			t.Fatal(err)
		}
		p := newPayloadOf(64, b, 3)
		now := time.Unix(1700000000, 5)
		v := p.fill(now, 3, 9)
		ts, id, err := parsePayload(v)
		if err != nil || len(v) != 64 || !ts.Equal(now) || id != (recordID{producer: 3, seq: 9}) {
			t.Fatalf("%s: %v %+v %v", kind, ts, id, err)
		}
		if !bytes.Equal(v[payloadHeader:], b.body(9+3*7919)) {
			t.Fatalf("%s: the body is not the producer's next one", kind)
		}
	}
}
