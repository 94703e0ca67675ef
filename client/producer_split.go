package client

// splitForLimit splits a batch not sent yet (no sequence numbers: nothing
// depends on its bounds) that is larger than its topic now takes (the
// metadata's max.message.bytes or cluster message.max.bytes, lowered since
// the batch was built) into batches within that limit, its records in
// order with their callbacks, timestamps and budget generations. It returns
// nil when the batch fits, when there is no limit, or when it holds a
// single record (which its leader will refuse as too large). Kafka's
// producer splits a batch after the leader refuses it; one already sent
// here keeps its sequence numbers, so only unsent batches are split.
func (pp *partProducer) splitForLimit(b *pbatch) []*pbatch {
	limit := pp.p.c.meta.current().maxMessageBytes(pp.topic)
	if limit <= 0 || b.encoded != nil || b.records() < 2 || b.bld.Size() <= limit {
		return nil
	}
	gens := make([]uint64, 0, b.records()) // each record's budget generation
	for _, g := range b.gens {
		for range g.n {
			gens = append(gens, g.gen)
		}
	}
	var out []*pbatch
	var cur *pbatch
	it := b.bld.Build().Iter()
	for i := 0; it.Next(); i++ {
		r := it.Record()
		rec := Record{Key: r.Key, Value: r.Value, Headers: r.Headers}
		size := recordSize(&rec)
		if cur != nil && cur.size+size > limit {
			out, cur = append(out, cur), nil
		}
		if cur == nil {
			cur = newBatch(nil, min(limit, 2*size+1024), limit, 8, b.created, 0)
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
		return nil
	}
	out = append(out, cur)
	pp.p.c.log.Debug("split a batch built under a larger limit than its topic now takes", "topic", pp.topic,
		"partition", pp.part, "records", b.records(), "bytes", b.bld.Size(), "limit", limit, "batches", len(out))
	b.cbs, b.gens = nil, nil // they moved to out
	if bld := b.release(); bld != nil {
		pp.keepBuilder(bld)
	}
	return out
}
