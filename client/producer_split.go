package client

import "paymentlog/segment"

// A batch larger than its topic takes is split into smaller batches, its
// records in order with their callbacks, timestamps and budget generations,
// in two cases (Kafka's producer splits only the second):
//
//   - Not sent yet, larger than the limit the metadata shows (the topic's
//     max.message.bytes or the cluster's message.max.bytes, lowered since
//     the batch was built): split before its first send, to that limit.
//   - Refused by its leader with RecordTooLarge while holding more than one
//     record (handle marks it tooLarge and requeues it in order, which puts
//     the partition through recovery with a metadata refresh): split when
//     it reaches the head of the queue again, in place of the batch and in
//     its sequence range (numberPieces). The pieces are packed to the limit
//     the fresh metadata shows when that explains the refusal (the limit is
//     below the batch's uncompressed size, which bounds what a leader
//     stores whatever its topic's compression.type), else cut in halves by
//     size: the refusal came from the topic's compression.type storing the
//     batch larger than it was sent, from a node's own limit, or from a
//     change the metadata does not show yet. A piece refused again is split
//     again; a record refused alone fails (RecordTooLargeError).
//
// Order: the pieces take the refused batch's place at the head of the
// queue; nothing after it was written (with idempotence the leader refuses
// the later batches in flight with OutOfOrderSequence, which are resent
// after the pieces; without, a later batch already in flight may be written
// first, as with any retry when MaxInFlight is above 1). A batch an earlier
// attempt of which may have been written (unknown) is split too: with
// idempotence its pieces are found duplicates of the parts of it the leader
// remembers (a leader answers a retry of part of a remembered batch with
// that part's offsets), as long as it is among the producer's last 5
// batches there; without, the pieces may write its records a second time,
// as any retry of it may.

// splitTarget returns the size b's pieces are packed to (estimated, as
// batches are filled), or 0 when b is not split now; halve says b is cut
// in two instead, at the record whose middle is past half its records'
// bytes (two pieces, neither larger than half by more than half a record).
func (pp *partProducer) splitTarget(b *pbatch) (target int, halve bool) {
	if b.records() < 2 {
		return 0, false
	}
	limit := pp.p.c.meta.current().maxMessageBytes(pp.topic)
	switch {
	case b.tooLarge && limit > 0 && limit < b.bld.Size():
		return limit, false
	case b.tooLarge:
		return b.size, true
	case b.encoded == nil && limit > 0 && b.bld.Size() > limit:
		return limit, false
	}
	return 0, false
}

// splitForLimit splits b, at the head of the queue and not in flight, when
// splitTarget says so: it returns the pieces to put in its place (encoded
// in b's place when b was, numberPieces), or nil to send b as it is. b is
// left empty: its records, callbacks and budget moved to the pieces.
func (pp *partProducer) splitForLimit(b *pbatch) []*pbatch {
	target, halve := pp.splitTarget(b)
	if target <= 0 {
		return nil
	}
	gens := make([]uint64, 0, b.records()) // each record's budget generation
	for _, g := range b.gens {
		for range g.n {
			gens = append(gens, g.gen)
		}
	}
	var it *segment.Records
	if b.encoded != nil {
		it = b.encoded.Iter() // decompresses a compressed one
	} else {
		it = b.bld.Build().Iter()
	}
	var out []*pbatch
	var cur *pbatch
	half := (b.size - batchHeaderEstimate) / 2 // of the records' bytes
	// full says cur, not empty, takes no record of size more.
	full := func(size int) bool {
		if halve {
			return len(out) == 0 && cur.size-batchHeaderEstimate+size/2 > half
		}
		return cur.size+size > target
	}
	for i := 0; it.Next(); i++ {
		r := it.Record()
		rec := Record{Key: r.Key, Value: r.Value, Headers: r.Headers}
		size := recordSize(&rec)
		if cur != nil && full(size) {
			out, cur = append(out, cur), nil
		}
		if cur == nil {
			cur = newBatch(nil, min(target, 2*size+1024), target, 8, b.created, 0)
			cur.deadline = b.deadline
		}
		cur.add(&rec, r.Timestamp, size, gens[i], b.cbs[i])
	}
	if err := it.Err(); err != nil || cur == nil {
		// Our own encoding does not decode: send it as it is.
		for _, nb := range append(out, cur) {
			if nb != nil {
				builderPool.Put(nb.release())
			}
		}
		pp.p.c.log.Error("a batch to split does not decode", "topic", pp.topic, "partition", pp.part, "err", it.Err())
		b.tooLarge = false
		return nil
	}
	out = append(out, cur)
	pp.p.stats.splits.Add(1)
	if b.tooLarge {
		pp.p.c.log.Info("split a batch its leader refused as too large", "topic", pp.topic, "partition", pp.part,
			"records", b.records(), "bytes", b.bld.Size(), "sent_bytes", len(b.encoded),
			"limit", pp.p.c.meta.current().maxMessageBytes(pp.topic), "halved", halve, "batches", len(out), "err", b.lastErr)
	} else {
		pp.p.c.log.Debug("split a batch built under a larger limit than its topic now takes", "topic", pp.topic,
			"partition", pp.part, "records", b.records(), "bytes", b.bld.Size(), "limit", target, "batches", len(out))
	}
	if b.encoded != nil {
		pp.numberPieces(b, out)
	}
	b.cbs, b.gens = nil, nil // they moved to out
	if bld := b.release(); bld != nil {
		pp.keepBuilder(bld)
	}
	return out
}

// numberPieces encodes the pieces of b, which was encoded and sent, in b's
// place: b's identity, its order and its sequence range (base, base+n1,
// base+n1+n2, ...), so that the batches encoded after b keep their
// sequences; the orders after b's move up to make room. The pieces carry
// on b's attempts, its error and whether a leader may have written it.
func (pp *partProducer) numberPieces(b *pbatch, pieces []*pbatch) {
	h, err := segment.ParseHeader(b.encoded)
	if err != nil {
		panic("client: a batch the producer encoded has no header: " + err.Error())
	}
	more := int64(len(pieces) - 1)
	for _, x := range pp.queue {
		if x.encoded != nil && x.order > b.order {
			x.order += more
		}
	}
	for _, x := range pp.inflight {
		if x.order > b.order {
			x.order += more
		}
	}
	if pp.gap != nil && pp.gap.order > b.order {
		pp.gap.order += more
	}
	pp.order += more
	seq := h.BaseSequence
	for i, nb := range pieces {
		opts := segment.BuilderOptions{Compression: pp.p.cfg.Compression}
		if pp.idempotent() {
			opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = b.id.pid, b.id.epoch, seq
			seq = addSeq(seq, nb.records())
		}
		nb.encode(opts)
		nb.id, nb.order = b.id, b.order+int64(i)
		nb.attempts, nb.unknown, nb.lastErr = b.attempts, b.unknown, b.lastErr
	}
}
