package client

import (
	"context"
	"fmt"
	"math"
	"time"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

func (pp *partProducer) ensurePID(now time.Time) bool {
	ctx, cancel := context.WithTimeout(pp.p.ctx, pp.p.c.cfg.RequestTimeout)
	pid, epoch, err := pp.p.producerID(ctx)
	cancel()
	if err != nil {
		pp.p.c.log.Warn("producer id unavailable", "topic", pp.topic, "partition", pp.part, "err", err)
		if code := ErrorCode(err); code != wire.Unknown && !code.Retriable() {
			// Refused (ClusterAuthorizationFailed: the principal may
			// write to no topic): asking again until the delivery
			// timeout gets the same answer. No batch has been sent
			// without an id, so none was written.
			pp.failUnsent(err, now)
			return false
		}
		if len(pp.queue) > 0 {
			pp.queue[0].lastErr = err
		}
		pp.enterRecovery(now, 3)
		return false
	}
	pp.id, pp.havePID, pp.nextSeq = producerIdentity{pid: pid, epoch: epoch}, true, 0
	return true
}

// failUnsent fails the queued batches not yet encoded (never sent, so not
// written) with err.
func (pp *partProducer) failUnsent(err error, now time.Time) {
	kept := pp.queue[:0]
	var failed []*pbatch
	for _, b := range pp.queue {
		if b.encoded == nil {
			failed = append(failed, b)
		} else {
			kept = append(kept, b)
		}
	}
	clear(pp.queue[len(kept):])
	pp.queue = kept
	for _, b := range failed {
		pp.terminal(b, err, true, now)
	}
}

// renewIdentity restarts the partition's sequence after a gap under an
// identity no replica has seen a batch of on this partition: the next epoch
// of its producer id, decided locally (producerIdentity.bumped, no round
// trip), or a fresh producer id once the epochs are used up. Batches the
// leader certainly did not write are re-encoded under it, the others are
// failed.
func (pp *partProducer) renewIdentity(now time.Time) bool {
	g := pp.gap
	id, ok := pp.id.bumped()
	if !ok {
		ctx, cancel := context.WithTimeout(pp.p.ctx, pp.p.c.cfg.RequestTimeout)
		pid, epoch, err := pp.p.c.initProducerID(ctx)
		cancel()
		if err != nil {
			pp.p.c.log.Warn("producer id reset failed", "topic", pp.topic, "partition", pp.part, "err", err)
			pp.queue[0].lastErr = err
			pp.enterRecovery(now, 3)
			return false
		}
		id = producerIdentity{pid: pid, epoch: epoch}
	}
	pp.gap = nil
	// Info, not Warn: after a quiet period longer than the brokers'
	// --producer-id-expiration (a day by default) this is the everyday
	// way back (cause UnknownProducerID), and no delivery fails for it.
	pp.p.c.log.Info("producer sequence restarted",
		"topic", pp.topic, "partition", pp.part, "old_pid", g.id.pid, "old_producer_epoch", g.id.epoch,
		"pid", id.pid, "producer_epoch", id.epoch, "cause", g.err)
	pp.id, pp.nextSeq = id, 0
	kept := pp.queue[:0]
	for _, b := range pp.queue {
		if b.encoded != nil && b.id == g.id && b.order > g.order {
			if b.unknown && !g.definitive {
				pp.finish(b, -1, &DeliveryError{Topic: pp.topic, Partition: pp.part, Attempts: b.attempts, Unknown: true,
					Err: fmt.Errorf("an earlier batch failed (%w) and this one may have been written", g.err)})
				continue
			}
			b.encoded = nil
		}
		kept = append(kept, b)
	}
	clear(pp.queue[len(kept):])
	pp.queue = kept
	return true
}

func (pp *partProducer) encode(b *pbatch) {
	opts := segment.BuilderOptions{Compression: pp.p.cfg.Compression}
	if pp.idempotent() {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pp.id.pid, pp.id.epoch, pp.nextSeq
		pp.nextSeq = addSeq(pp.nextSeq, b.records())
	}
	b.encode(opts)
	b.id = pp.id
	b.order = pp.order
	pp.order++
}

// addSeq advances a sequence number, wrapping at MaxInt32 as Kafka does.
func addSeq(seq int32, n int) int32 {
	return int32((int64(seq) + int64(n)) % (math.MaxInt32 + 1))
}

func (pp *partProducer) send(b *pbatch, ld leader, now time.Time) {
	ctx, cancel := context.WithTimeout(pp.p.ctx, pp.p.cfg.RequestTimeout+requestGrace)
	b.cancel = cancel
	b.inFlight = true
	b.moved = false
	b.sentTo = ld
	b.sentAt = now
	if b.attempts == 0 {
		pp.p.stats.batchSent(b, now)
	}
	b.attempts++
	pp.inflight = append(pp.inflight, b)
	req := &wire.ProduceRequest{
		Acks:      pp.p.cfg.Acks.wire(),
		TimeoutMs: int32(pp.p.cfg.RequestTimeout / time.Millisecond),
		Topic:     pp.topic,
		Parts:     []wire.ProducePartition{{Partition: pp.part, LeaderEpoch: ld.epoch, Batch: wire.Bytes(b.encoded)}},
	}
	if pp.p.cfg.idempotent() {
		// The partition deduplicates the batch by producer id and sequence,
		// so a second copy changes nothing: the transport may send it again
		// to a leader that restarted since the connection was made, as this
		// producer's own retry would (see quic.Idempotent). A batch without
		// a producer id may have been appended by the process that died: it
		// is left to the retry policy.
		ctx = quic.Idempotent(ctx)
	}
	// The partition's requests go out in the order they are sent here,
	// though each is made on a goroutine of its own: a batch that reaches
	// the leader before the one its sequence follows waits there, or is
	// refused and resent with every batch after it. Without idempotence the
	// leader appends the batches in the order of their streams on the
	// connection (node/broker/produce_order.go).
	ctx, pp.lastWrite = quic.WriteAfter(ctx, pp.lastWrite)
	go func() {
		var resp wire.ProduceResponse
		r := attemptResult{b: b}
		start := time.Now()
		r.err = pp.p.c.call(ctx, ld.addr, wire.TypeProduce, req, &resp)
		if r.err == nil {
			pp.p.stats.throttledAnswer(resp.ThrottleMs)
			r.err = errMalformedResponse
			for _, pr := range resp.Parts {
				if pr.Partition == pp.part {
					r.resp, r.err = pr, nil
					break
				}
			}
		}
		pp.p.stats.requestDone(start, r.err, r.resp.Err)
		pp.results <- r
	}()
}

func (pp *partProducer) removeInflight(b *pbatch) {
	for i, x := range pp.inflight {
		if x == b {
			pp.inflight = append(pp.inflight[:i], pp.inflight[i+1:]...)
			return
		}
	}
}

// isHead reports whether no batch encoded before b is still unresolved.
func (pp *partProducer) isHead(b *pbatch) bool {
	lo, ok := pp.oldestUnresolved()
	return !ok || b.id != pp.id || b.order <= lo
}
