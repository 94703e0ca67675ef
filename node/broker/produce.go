package broker

import (
	"context"
	"fmt"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

const defaultMaxBatchBytes = 16<<20 - 1<<10

// handleProduce appends one batch per listed partition and answers per
// partition: acks=0 once appended (with its offsets, as for the others:
// unlike Kafka, which sends no answer at all, so that the producer learns of
// a refusal such as NotLeader), acks=1 once the local fsync policy is met,
// acks=all once the HW has passed the batch too. acks=1 and acks=all answer
// success only if the node has led without a break since the append
// (NotLeader otherwise).
func (b *Broker) handleProduce(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
	start := time.Now()
	var req wire.ProduceRequest
	// The batches alias the request frame, which stays valid until the
	// response is written: they are validated, stamped and copied into the
	// log in place.
	if err := fr.DecodeNoCopy(&req); err != nil {
		return 0, nil, err
	}
	// Batches without sequences are appended in their streams' order
	// (produce_order.go); the endpoint releases the stream's place, if
	// the appends have not, once this returns.
	order := orderUnsequenced(ctx, &req)
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if req.TimeoutMs <= 0 {
		timeout = DefaultProduceTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	b.counters.produceRequests.Add(1)
	resp := wire.ProduceResponse{Parts: make([]wire.ProducePartitionResponse, len(req.Parts))}
	if e := b.authorize(peer, wire.OpWrite, req.Topic); e != nil {
		for i, pp := range req.Parts {
			resp.Parts[i] = wire.ProducePartitionResponse{Partition: pp.Partition, Err: e.Code, Message: e.Message,
				BaseOffset: -1, LeaderHint: -1, LogStart: -1}
		}
		return wire.TypeProduce, resp, nil
	}
	if held := b.holdBack(ctx, peer, wire.QuotaProducerByteRate); held > 0 {
		b.countThrottle(throttledProduce, held)
		resp.ThrottleMs = int32(held / time.Millisecond)
		start = start.Add(held) // the latency histogram is the cluster's, not the quota's
	}
	b.recordQuota(peer, wire.QuotaProducerByteRate, producedBytes(&req))
	waits := make([]func(), 0, len(req.Parts))
	for i := range req.Parts {
		out := &resp.Parts[i]
		order.await(ctx, &b.counters, i)
		wait := b.produceOne(ctx, req.Acks, req.Topic, &req.Parts[i], out)
		order.done(i)
		if wait != nil {
			waits = append(waits, wait)
		}
	}
	for _, wait := range waits {
		wait()
	}
	b.counters.produced(req.Acks, start, resp.Parts)
	return wire.TypeProduce, resp, nil
}

// produceOne appends one partition's batch and fills out; for acks=1/all it
// returns a function that waits for the acknowledgement condition and
// completes out (so several partitions wait in parallel).
func (b *Broker) produceOne(ctx context.Context, acks int8, topic string, pp *wire.ProducePartition, out *wire.ProducePartitionResponse) func() {
	*out = wire.ProducePartitionResponse{Partition: pp.Partition, BaseOffset: -1, LeaderHint: -1, LogStart: -1}
	p := b.clientPartition(topic, pp.Partition)
	if p == nil {
		out.Err = wire.UnknownTopicOrPartition
		return nil
	}
	batch := segment.Batch(pp.Batch)
	pol := p.messages.Load()
	if code, msg := b.checkBatchSize(topic, pol, len(batch)); code != wire.None {
		out.Err, out.Message = code, msg
		return nil
	}
	if err := batch.Validate(); err != nil || batch.Size() != len(batch) {
		out.Err, out.Message = wire.CorruptMessage, "invalid batch (one whole batch per partition, CRC-32C checked)"
		return nil
	}
	h, err := segment.ParseHeader(batch)
	if err != nil {
		out.Err, out.Message = wire.CorruptMessage, err.Error()
		return nil
	}
	if h.Compacted() {
		out.Err, out.Message = wire.CorruptMessage, "batch has the compacted attribute (bit 7), which only the log cleaner sets"
		return nil
	}
	if h.LogAppendTime() {
		out.Err, out.Message = wire.CorruptMessage, "batch has the log-append-time attribute (bit 3), which only a leader sets"
		return nil
	}
	if c := h.Compression(); !c.Supported() {
		out.Err, out.Message = wire.UnsupportedCompressionType, fmt.Sprintf("compression %v: this node reads none, lz4 and zstd", c)
		return nil
	}
	now := b.cfg.Now()
	code, msg := checkRecords(batch, topic, p.compacted.Load(), pol, now)
	if code != wire.None {
		out.Err, out.Message = code, msg
		return nil
	}
	sent, rewritten := len(batch), false
	if pol != nil && pol.Recompress && h.Compression() != pol.Codec {
		// A new buffer (unless the codec would not shrink an
		// uncompressed batch): the request frame stays as it came.
		codec := h.Compression()
		if batch, h, code, msg = b.recompress(topic, pol, batch); code != wire.None {
			out.Err, out.Message = code, msg
			return nil
		}
		rewritten = h.Compression() != codec
	}
	if pol != nil && pol.LogAppendTime {
		// In place: the batch aliases the request frame (handleProduce),
		// or is the rewritten one.
		batch.StampLogAppendTime(now.UnixMilli())
		h.FirstTimestamp, h.MaxTimestamp = now.UnixMilli(), now.UnixMilli()
	}
	base, last, epoch, dup, code := p.appendLeader(ctx, acks, pp.LeaderEpoch, batch, h, now)
	if rewritten && code == wire.None && !dup {
		b.counters.countRecompressed(sent, len(batch))
	}
	if pol != nil && pol.LogAppendTime && code == wire.None {
		out.LogAppendTime = now.UnixMilli()
		if dup {
			out.LogAppendTime = p.appendTimeAt(base)
		}
	}
	out.LeaderEpoch = epoch
	if code != wire.None {
		out.Err = code
		if code == wire.NotLeader || code == wire.FencedLeaderEpoch || code == wire.UnknownLeaderEpoch {
			out.LeaderHint = p.leaderHint()
		}
		return nil
	}
	out.BaseOffset = base
	out.LogStart = p.log.LogStartOffset()
	if acks == wire.AcksNone {
		return nil
	}
	return func() {
		if err := p.log.WaitDurable(ctx, last+1); err != nil {
			out.Err, out.Message = wire.KafkaStorageError, err.Error()
			if ctx.Err() != nil {
				out.Err = wire.Timeout
				// The batch still counts toward the HW once durable;
				// the flush this request waited for may not cover it,
				// and no other write may come to flush it.
				p.syncInBackground(epoch, last+1)
			}
			return
		}
		// The leader counts its own records toward the HW once durable.
		p.syncedTo(epoch, last+1)
		if acks != wire.AcksAll {
			// The batch is durable at [base, last], but only if it was
			// not truncated away meanwhile (leadership lost, then
			// regained, its offsets reused): acknowledge it only within
			// the leadership it was appended in, as waitHW does.
			if c := p.checkLeadership(epoch); c != replica.OK {
				out.Err, out.LeaderHint = codeToWire(c), p.leaderHint()
			}
			return
		}
		if c := p.waitHW(ctx, b.reqSeq.Add(1), epoch, last+1); c != replica.OK {
			out.Err = codeToWire(c)
			if c == replica.NotLeader {
				out.LeaderHint = p.leaderHint()
			}
		}
	}
}

// checkLeadership says whether this replica has led without a break since
// it appended a batch as leader of epoch (replica.CheckLeadership).
func (p *partition) checkLeadership(epoch int32) replica.Code {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped {
		return replica.NotLeader
	}
	return p.mu.r.CheckLeadership(epoch)
}

func (p *partition) leaderHint() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.r.Leader()
}

// appendLeader checks leadership, epoch, min ISR and the producer sequence,
// then appends the batch. It returns the batch's offsets (the original ones
// for a retried duplicate, with dup set) and the leader epoch. now is the
// broker's clock as the request's checks read it. A batch that overtook
// earlier ones of its producer waits for them (reorder.go).
func (p *partition) appendLeader(ctx context.Context, acks int8, reqEpoch int32, batch segment.Batch, h segment.Header, now time.Time) (base, last int64, epoch int32, dup bool, code wire.ErrorCode) {
	var until time.Time
	for {
		var earlier <-chan struct{}
		var wait time.Duration
		base, last, epoch, dup, code, earlier, wait = p.tryAppendLeader(ctx, acks, reqEpoch, batch, h, now)
		if earlier == nil {
			return base, last, epoch, dup, code
		}
		if until.IsZero() {
			until = time.Now().Add(wait)
			p.b.counters.reorderWaits.Add(1)
		}
		if !p.awaitEarlier(ctx, earlier, until) {
			p.b.counters.reorderRefused.Add(1)
			return base, last, epoch, dup, code
		}
	}
}

// tryAppendLeader is one attempt of appendLeader. earlier is set, with the
// refusal, when the batch's sequence is ahead of its producer's on this
// partition: it is closed by the next append, after which the batch may
// follow; wait is how long the batch may wait in all (producerState.ahead).
func (p *partition) tryAppendLeader(ctx context.Context, acks int8, reqEpoch int32, batch segment.Batch, h segment.Header, now time.Time) (base, last int64, epoch int32, dup bool, code wire.ErrorCode, earlier <-chan struct{}, wait time.Duration) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	r := p.mu.r
	epoch = r.LeaderEpoch()
	hw := r.HW()
	c := r.CheckProduce(reqEpoch, acks == wire.AcksAll)
	if p.mu.stopped {
		c = replica.NotLeader
	}
	p.mu.Unlock()
	if c != replica.OK {
		return -1, -1, epoch, false, codeToWire(c), nil, 0
	}
	if p.b.fenced.Load() {
		return -1, -1, epoch, false, wire.NotLeader, nil, 0
	}
	if h.ProducerID >= 0 && h.BaseSequence >= 0 {
		switch v, orig := p.producers.check(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta); v {
		case seqDuplicate:
			return orig.baseOffset, orig.lastOffset, epoch, true, wire.None, nil, 0
		case seqOutOfOrder, seqUnknownProducer:
			code = wire.OutOfOrderSequence
			if v == seqUnknownProducer {
				code = wire.UnknownProducerID
			}
			if wait = p.b.reorderWait(p.producers.ahead(h.ProducerID, h.ProducerEpoch, h.BaseSequence)); wait > 0 {
				earlier = p.nextAppendLocked()
			}
			return -1, -1, epoch, false, code, earlier, wait
		case seqInvalidEpoch:
			return -1, -1, epoch, false, wire.InvalidProducerEpoch, nil, 0
		case seqUnknown:
			return -1, -1, epoch, false, wire.KafkaStorageError, nil, 0
		}
	}
	info, err := p.log.Append(ctx, batch, epoch)
	if err != nil {
		p.lg.Error("append failed", "epoch", epoch, "err", err)
		return -1, -1, epoch, false, appendErrCode(err), nil, 0
	}
	p.producers.update(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta, info.BaseOffset, seenAt(h, now))
	p.appendedLocked()
	p.producers.advance(hw)
	p.b.counters.produceBytes.Add(uint64(len(batch)))
	p.decide(func(r *replica.Replica) replica.Decisions { return r.LocalAppend(info.LastOffset + 1) })
	switch {
	case p.b.cfg.Log.Sync != segment.SyncAlways:
		// Durable as far as the policy promises (it waits for nothing).
		p.syncedTo(epoch, info.LastOffset+1)
	case acks == wire.AcksNone:
		p.syncInBackground(epoch, info.LastOffset+1) // no request waits for this flush
	}
	return info.BaseOffset, info.LastOffset, epoch, false, wire.None, nil, 0
}

// waitHW parks request id, whose batch was appended as leader of epoch,
// until the HW reaches required; it returns OK, NotLeader (leadership lost
// meanwhile, even if regained since) or Timeout (ctx expired).
func (p *partition) waitHW(ctx context.Context, id uint64, epoch int32, required int64) replica.Code {
	ch := make(chan replica.Code, 1)
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		return replica.NotLeader
	}
	p.mu.reqs[id] = ch
	prop := p.decideLocked(p.mu.r.ParkProduce(id, epoch, required, time.Time{}))
	p.mu.Unlock()
	p.propose(prop)
	select {
	case c := <-ch:
		return c
	case <-ctx.Done():
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.r.Cancel(id) {
		delete(p.mu.reqs, id)
		return replica.Timeout
	}
	// Completed concurrently (or failed by Stop, which leaves reqs to us).
	delete(p.mu.reqs, id)
	select {
	case c := <-ch:
		return c
	default:
		return replica.NotLeader
	}
}
