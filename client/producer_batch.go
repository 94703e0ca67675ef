package client

import (
	"context"
	"time"

	"paymentlog/segment"
)

// batchHeaderEstimate bounds the encoded batch header size.
const batchHeaderEstimate = 64

// recEntry is one buffered record; its key and value live in the batch's arena.
type recEntry struct {
	ts      int64
	keyOff  int32
	keyLen  int32 // -1: nil key
	valOff  int32
	valLen  int32
	headers []segment.RecordHeader
	cb      func(Delivery)
}

// pbatch is one producer batch: records copied into an arena while open, then
// encoded once, at its first send, with the partition's producer id and
// sequence. Retries resend the same encoded bytes.
type pbatch struct {
	arena    []byte
	recs     []recEntry
	size     int // estimated encoded size
	created  time.Time
	deadline time.Time // delivery deadline

	// Owned by the partition's sender goroutine.
	encoded  segment.Batch // nil until first sent (or after a producer-id reset)
	order    int64         // encoding order within the partition; sequence order for one producer id
	pid      int64
	attempts int
	unknown  bool // some attempt's outcome is unknown: a leader may have written it
	oos      int  // OutOfOrderSequence answers while nothing before it was unresolved
	lastErr  error
	sentTo   leader
	sentAt   time.Time
	cancel   context.CancelFunc
}

func newBatch(capHint, recsHint int, now time.Time, deliveryTimeout time.Duration) *pbatch {
	return &pbatch{
		arena:    make([]byte, 0, capHint),
		recs:     make([]recEntry, 0, recsHint),
		size:     batchHeaderEstimate,
		created:  now,
		deadline: now.Add(deliveryTimeout),
	}
}

// add copies one record into the batch.
func (b *pbatch) add(r *Record, ts int64, size int, cb func(Delivery)) {
	e := recEntry{ts: ts, keyLen: -1, cb: cb}
	if r.Key != nil {
		e.keyOff, e.keyLen = int32(len(b.arena)), int32(len(r.Key))
		b.arena = append(b.arena, r.Key...)
	}
	e.valOff, e.valLen = int32(len(b.arena)), int32(len(r.Value))
	b.arena = append(b.arena, r.Value...)
	if len(r.Headers) > 0 {
		e.headers = make([]segment.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			e.headers[i] = segment.RecordHeader{Key: h.Key, Value: append([]byte(nil), h.Value...)}
		}
	}
	b.recs = append(b.recs, e)
	b.size += size
}

func (b *pbatch) key(e *recEntry) []byte {
	if e.keyLen < 0 {
		return nil
	}
	return b.arena[e.keyOff : e.keyOff+e.keyLen : e.keyOff+e.keyLen]
}

func (b *pbatch) value(e *recEntry) []byte {
	return b.arena[e.valOff : e.valOff+e.valLen : e.valOff+e.valLen]
}

// encode builds the batch bytes with the given producer identity. bld is
// reused between batches (Build's result owns its bytes).
func (b *pbatch) encode(bld **segment.Builder, opts segment.BuilderOptions) {
	if *bld == nil {
		*bld = segment.NewBuilder(opts)
	} else {
		(*bld).Reset(opts)
	}
	for i := range b.recs {
		e := &b.recs[i]
		(*bld).Add(e.ts, b.key(e), b.value(e), e.headers)
	}
	b.encoded = (*bld).Build()
}

// deliver calls every record's callback: with offsets base+i on success
// (base < 0: offsets unknown, reported as -1), else with err.
func (b *pbatch) deliver(topic string, part int32, base int64, err error) {
	for i := range b.recs {
		cb := b.recs[i].cb
		if cb == nil {
			continue
		}
		d := Delivery{Topic: topic, Partition: part, Offset: -1, Err: err}
		if err == nil && base >= 0 {
			d.Offset = base + int64(i)
		}
		cb(d)
	}
}

// budgetBytes is what the batch holds of the producer's budget.
func (b *pbatch) budgetBytes() int64 { return int64(b.size - batchHeaderEstimate) }
