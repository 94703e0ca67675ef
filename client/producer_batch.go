package client

import (
	"context"
	"sync"
	"time"

	"paymentlog/segment"
)

// batchHeaderEstimate bounds the encoded batch header size.
const batchHeaderEstimate = 64

// pbatch is one producer batch: records are encoded into its builder as
// they are produced (one copy of each key and value); the header, with the
// partition's producer id and sequence, is stamped at the batch's first send.
// Retries resend the same bytes; after a producer-id reset the header is
// stamped again.
type pbatch struct {
	bld      *segment.Builder
	cbs      []DeliveryHandler // one per record, nil entries allowed
	gens     []genCount        // the records' budget generations, in runs
	size     int               // estimated encoded size
	created  time.Time
	deadline time.Time // delivery deadline

	// Owned by the partition's sender goroutine.
	encoded  segment.Batch    // nil until first sent (or after a producer-id reset); aliases bld
	order    int64            // encoding order within the partition; sequence order for one producer id
	id       producerIdentity // what encoded is numbered under
	attempts int
	inFlight bool // a request carrying encoded may still be writing it
	unknown  bool // some attempt's outcome is unknown: a leader may have written it
	// appendTime is the leader's LogAppendTime for the batch (unix ms; 0:
	// none), set with its success.
	appendTime int64
	oos        int  // OutOfOrderSequence answers while nothing before it was unresolved
	moved      bool // its request was abandoned because the metadata names a newer leader
	lastErr    error
	sentTo     leader
	sentAt     time.Time
	cancel     context.CancelFunc

	// tooLarge: its leader refused it as too large (RecordTooLarge) while
	// it held more than one record: it is split before it is sent again
	// (producer_split.go).
	tooLarge bool
}

// builderPool recycles the builders (and their batch-sized buffers) of
// resolved batches that no partition keeps as a spare (see
// partProducer.keepBuilder).
var builderPool sync.Pool

// newBatch starts a batch in bld (nil: one from the pool or a new one),
// whose buffer holds at least capHint bytes of records and grows to at most
// maxBytes of them (unless one record is larger).
func newBatch(bld *segment.Builder, capHint, maxBytes, recsHint int, now time.Time, deliveryTimeout time.Duration) *pbatch {
	if bld == nil {
		bld, _ = builderPool.Get().(*segment.Builder)
	}
	if bld == nil {
		bld = segment.NewBuilder(segment.BuilderOptions{})
	}
	bld.Recycle(segment.BuilderOptions{}, capHint+segment.HeaderSize)
	bld.LimitGrowth(maxBytes + segment.HeaderSize)
	return &pbatch{
		bld:      bld,
		cbs:      make([]DeliveryHandler, 0, recsHint),
		size:     batchHeaderEstimate,
		created:  now,
		deadline: now.Add(deliveryTimeout),
	}
}

// add encodes one record into the batch. A nil Key or Value is stored as
// null (a null value is a tombstone: on a compacted topic it deletes its
// key); an empty one as empty.
func (b *pbatch) add(r *Record, ts int64, size int, gen uint64, cb DeliveryHandler) {
	b.bld.Add(ts, r.Key, r.Value, r.Headers)
	b.cbs = append(b.cbs, cb)
	if n := len(b.gens); n > 0 && b.gens[n-1].gen == gen {
		b.gens[n-1].n++
	} else {
		b.gens = append(b.gens, genCount{gen, 1})
	}
	b.size += size
}

// records is the number of records in the batch.
func (b *pbatch) records() int { return len(b.cbs) }

// encode stamps the header with the given producer identity. It rewrites
// the bytes of an earlier encoding in place: callers re-encode only while
// the batch is not in flight.
func (b *pbatch) encode(opts segment.BuilderOptions) {
	b.bld.SetOptions(opts)
	b.encoded = b.bld.Build()
}

// release drops the resolved batch's state and returns its builder for
// reuse, or nil while a request may still be writing its bytes.
func (b *pbatch) release() *segment.Builder {
	bld := b.bld
	if b.inFlight {
		bld = nil
	}
	b.bld, b.cbs, b.gens, b.encoded = nil, nil, nil, nil
	return bld
}

// deliver calls every record's callback: with offsets base+i on success
// (base < 0: offsets unknown, reported as -1), else with err.
func (b *pbatch) deliver(topic string, part int32, base int64, err error) {
	for i, cb := range b.cbs {
		if cb == nil {
			continue
		}
		d := Delivery{Topic: topic, Partition: part, Offset: -1, Err: err}
		if err == nil && base >= 0 {
			d.Offset = base + int64(i)
		}
		if err == nil && b.appendTime > 0 {
			d.LogAppendTime = time.UnixMilli(b.appendTime).UTC()
		}
		cb.Delivered(d)
	}
}

// budgetBytes is what the batch holds of the producer's budget.
func (b *pbatch) budgetBytes() int64 { return int64(b.size - batchHeaderEstimate) }
