package client

import (
	"fmt"
	"math/rand/v2"
	"time"

	"paymentlog/wire"
)

// handle applies one attempt's outcome.
func (pp *partProducer) handle(r attemptResult) {
	b := r.b
	b.cancel()
	b.inFlight = false // its request has returned
	pp.removeInflight(b)
	now := time.Now()
	if r.err != nil {
		pp.p.c.log.Debug("produce attempt failed", "topic", pp.topic, "partition", pp.part,
			"node", b.sentTo.id, "epoch", b.sentTo.epoch, "err", r.err)
		if b.moved {
			// Abandoned by checkLeaders: the metadata in hand already names
			// the new leader, so neither a backoff nor another refresh buys
			// anything. The old leader may have written it: unknown.
			b.moved = false
			b.unknown = true
			pp.retryNow(b, now, r.err)
			return
		}
		pp.retry(b, now, r.err, true, true)
		return
	}
	code := r.resp.Err
	err := code.Err(r.resp.Message)
	switch {
	case code == wire.None:
		b.appendTime = r.resp.LogAppendTime
		pp.succeed(b, r.resp.BaseOffset)
	case code == wire.DuplicateSequence:
		if r.resp.BaseOffset >= 0 {
			pp.succeed(b, r.resp.BaseOffset)
		} else {
			// Written, so no sequence gap: later batches carry on. The
			// delivery fails for want of offsets, but it must not read as
			// "not written": Unknown says it is (may be) in the log.
			pp.finish(b, -1, &DeliveryError{Topic: pp.topic, Partition: pp.part, Attempts: b.attempts, Unknown: true, Err: ErrDuplicateNoOffset})
		}
	case code == wire.OutOfOrderSequence:
		head := pp.isHead(b)
		if head {
			b.oos++
		}
		switch {
		case b.oos >= maxHeadOOS:
			pp.resequence(b, err, now, b.attempts)
		case !head:
			// It overtook an earlier batch still unresolved: resend in
			// order as soon as everything in flight is back, no backoff.
			pp.retryNow(b, now, err)
		default:
			pp.retry(b, now, err, false, true)
		}
	case code == wire.UnknownProducerID:
		// The leader has no state for the producer id (it expired after a
		// quiet period, or this replica never saw its batches): it did
		// not write b. Restart the sequence under the next epoch and
		// resend at once: one extra round trip, no backoff, no error to
		// the application (node/broker/producer_expiry.go says why this
		// cannot write a batch twice).
		pp.resequence(b, err, now, 0)
	case code == wire.InvalidProducerEpoch:
		pp.resequence(b, err, now, b.attempts)
	case code == wire.RecordTooLarge:
		pp.refusedTooLarge(b, err, now)
	case code == wire.UnknownLeaderEpoch && pp.behind < behindRefreshAfter &&
		pp.p.c.meta.current().leads(pp.topic, pp.part, b.sentTo.id, b.sentTo.epoch):
		// Our metadata names that node the leader at that epoch and the
		// node has not applied it yet (it will within moments; it wrote
		// nothing): resend soon, without a refresh, a few times (then as
		// any refusal: maybe ours is what changed since).
		pp.behind++
		pp.p.c.log.Debug("produce reached its leader before the leader's own metadata did; resending soon", "topic", pp.topic,
			"partition", pp.part, "node", b.sentTo.id, "epoch", b.sentTo.epoch, "tries", pp.behind)
		pp.retryIn(b, now, err, behindRetry(pp.behind, pp.p.cfg.RetryBackoff))
	case code.Retriable():
		// A leader that appended the batch and then lost its leadership
		// while waiting for the ISR (acks=all) or for its flush (acks=1,
		// and acks=all too) answers NotLeader: the batch may survive on
		// the new leader.
		unknown := code == wire.Timeout || code == wire.NotEnoughReplicasAfterAppend || code == wire.KafkaStorageError ||
			(code == wire.NotLeader && pp.p.cfg.Acks != AcksNone)
		needMeta := code != wire.NotEnoughReplicas && code != wire.NotEnoughReplicasAfterAppend && code != wire.Timeout
		pp.p.c.log.Debug("produce refused, retrying", "topic", pp.topic, "partition", pp.part,
			"node", b.sentTo.id, "epoch", b.sentTo.epoch, "err", err)
		pp.retry(b, now, err, unknown, needMeta)
	default:
		// The refusal says this attempt wrote nothing; an earlier attempt
		// whose answer was lost may have written the batch all the same.
		pp.terminal(b, err, !b.unknown, now)
	}
}

// refusedTooLarge handles a batch its leader refused as larger than its
// topic takes (RecordTooLarge: the topic's max.message.bytes lowered since
// the batch was built, or its compression.type storing it larger than it
// was sent). This attempt wrote nothing. A batch of several records goes
// back in the queue, in order, to be split when it is next at its head
// (producer_split.go), after the partition's recovery: every request in
// flight resolved (with idempotence the later ones are refused for the gap
// it leaves and resent after its pieces) and the metadata refreshed, so
// that its pieces and later batches follow the new limit. No backoff: the
// pieces are not what was refused. A record alone fails, naming the topic.
func (pp *partProducer) refusedTooLarge(b *pbatch, err error, now time.Time) {
	pp.needMeta = true
	if b.records() > 1 {
		b.tooLarge = true
		pp.retryNow(b, now, err)
		return
	}
	err = &RecordTooLargeError{Size: len(b.encoded), Max: pp.p.c.meta.current().maxMessageBytes(pp.topic), Topic: pp.topic, Err: err}
	pp.terminal(b, err, !b.unknown, now)
}

// retry queues b for a resend after the partition recovers.
func (pp *partProducer) retry(b *pbatch, now time.Time, err error, unknown, needMeta bool) {
	b.unknown = b.unknown || unknown
	pp.needMeta = pp.needMeta || needMeta
	pp.retryIn(b, now, err, pp.p.backoff(b.attempts))
}

// retryNow queues b for a resend without a backoff.
func (pp *partProducer) retryNow(b *pbatch, now time.Time, err error) {
	pp.retryIn(b, now, err, 0)
}

// retryIn queues b for a resend once wait has passed (and inflight
// drained), or fails it when its delivery deadline has passed.
func (pp *partProducer) retryIn(b *pbatch, now time.Time, err error, wait time.Duration) {
	b.lastErr = err
	if now.After(b.deadline) {
		pp.terminal(b, fmt.Errorf("%w: %w", ErrDeliveryTimeout, err), !b.unknown, now)
		return
	}
	pp.insertQueue(b)
	pp.enterRecoveryIn(now, wait)
}

// resequence handles a leader that will never accept b's sequence (unknown
// producer id, fenced epoch, persistent OutOfOrderSequence): the leader did
// not write b, so b and the batches after it go out again under a new
// identity (renewIdentity), after the backoff for attempt.
func (pp *partProducer) resequence(b *pbatch, err error, now time.Time, attempt int) {
	b.lastErr = err
	b.oos = 0
	pp.setGap(&gap{order: b.order - 1, id: b.id, definitive: true, err: err})
	pp.insertQueue(b)
	pp.enterRecovery(now, attempt)
}

// terminal fails b for good; definitive says the leader certainly did not write it.
func (pp *partProducer) terminal(b *pbatch, err error, definitive bool, now time.Time) {
	pp.p.c.log.Warn("produce failed", "topic", pp.topic, "partition", pp.part, "records", b.records(), "err", err)
	// Only a batch certainly not written leaves a gap (finish forgets b's
	// encoding, so decide first). After one that may have been written the
	// later batches keep their sequences: the leader tells a duplicate from
	// a gap (OutOfOrderSequence, and resequence) better than we can.
	if pp.idempotent() && b.encoded != nil && definitive {
		pp.setGap(&gap{order: b.order, id: b.id, definitive: true, err: err})
	}
	pp.finish(b, -1, &DeliveryError{Topic: pp.topic, Partition: pp.part, Attempts: b.attempts, Unknown: b.unknown && !definitive, Err: err})
	pp.enterRecovery(now, 0)
}

func (pp *partProducer) setGap(g *gap) {
	if pp.gap == nil || pp.gap.id != g.id || g.order < pp.gap.order {
		pp.gap = g
	}
}

func (pp *partProducer) insertQueue(b *pbatch) {
	i := 0
	for i < len(pp.queue) && pp.queue[i].encoded != nil && pp.queue[i].order < b.order {
		i++
	}
	pp.queue = append(pp.queue, nil)
	copy(pp.queue[i+1:], pp.queue[i:])
	pp.queue[i] = b
}

func (pp *partProducer) enterRecovery(now time.Time, attempts int) {
	pp.enterRecoveryIn(now, pp.p.backoff(attempts))
}

// enterRecoveryIn stops sending until inflight drains and wait has passed.
func (pp *partProducer) enterRecoveryIn(now time.Time, wait time.Duration) {
	at := now.Add(wait)
	if !pp.recovering || at.After(pp.retryAt) {
		pp.retryAt = at
	}
	pp.recovering = true
}

func (pp *partProducer) succeed(b *pbatch, base int64) {
	pp.probe = false
	pp.behind = 0
	pp.finish(b, base, nil)
}

// finish resolves b: callbacks, then its budget is released.
func (pp *partProducer) finish(b *pbatch, base int64, err error) {
	b.deliver(pp.topic, pp.part, base, err)
	pp.p.budget.release(b.budgetBytes(), b.gens)
	if bld := b.release(); bld != nil {
		pp.keepBuilder(bld)
	}
}

// checkLeaders abandons requests sent to a leader the metadata says has been
// replaced. On the timer it also asks for fresher metadata when a request has
// been outstanding for LeaderCheckInterval.
func (pp *partProducer) checkLeaders(now time.Time, refresh bool) {
	if len(pp.inflight) == 0 {
		return
	}
	ivl := pp.p.cfg.LeaderCheckInterval
	stalled := now.Sub(pp.inflight[0].sentAt) >= ivl
	if refresh && stalled {
		pp.checkedAt = now
		pp.p.c.meta.refreshIfOlderHedged(ivl/2, pp.p.stalledHedge())
	}
	if stalled {
		// And a long poll elsewhere (one per client): the news of a new
		// leader arrives when a node applies it, not at the next of
		// these checks.
		pp.p.c.meta.watch([]string{pp.inflight[0].sentTo.addr}, nil)
	}
	pm, ok := pp.p.c.meta.current().partition(pp.topic, pp.part)
	if !ok {
		return
	}
	for _, b := range pp.inflight {
		if pm.LeaderEpoch > b.sentTo.epoch || (pm.LeaderEpoch == b.sentTo.epoch && pm.Leader != b.sentTo.id) {
			pp.p.c.log.Debug("abandoning request to a replaced leader", "topic", pp.topic, "partition", pp.part,
				"node", b.sentTo.id, "epoch", b.sentTo.epoch, "new_epoch", pm.LeaderEpoch)
			b.moved = true
			b.cancel()
		}
	}
}

// behindRefreshAfter is how many UnknownLeaderEpoch answers in a row from
// the leader our metadata names are retried soon (1, 2, 4, ... ms apart)
// without a metadata refresh, by producers and consumers: if that node is
// still behind by then, maybe ours is what changed since, and the usual
// refresh and backoff follow until a success.
const behindRefreshAfter = 5

// behindRetry is the wait before the n-th quick retry (n from 1) of a
// leader behind its metadata: 1 ms doubling, at most limit.
func behindRetry(n int, limit time.Duration) time.Duration {
	return min(time.Millisecond<<min(n-1, 20), limit)
}

// abort fails everything left (Close after its flush gave up). Requests in
// flight are cancelled and their outcomes awaited, not guessed: one may have
// been written (its answer may even be a success on its way), so each is
// handled as any answer is, and what is then left fails with
// ErrProducerClosed, saying "may have been written" (a DeliveryError with
// Unknown) for every batch some attempt of which may have been written.
func (pp *partProducer) abort() {
	for _, b := range pp.inflight {
		b.cancel()
	}
	for len(pp.inflight) > 0 {
		pp.handle(<-pp.results)
	}
	for _, b := range pp.queue {
		pp.finish(b, -1, pp.closedErr(b))
	}
	pp.queue = nil
	pp.mu.Lock()
	left := append(pp.mu.closed, pp.mu.open)
	pp.mu.closed, pp.mu.open = nil, nil
	pp.mu.Unlock()
	for _, b := range left {
		if b != nil {
			pp.finish(b, -1, ErrProducerClosed)
		}
	}
}

// closedErr is the error of a batch failed by Close: ErrProducerClosed,
// wrapped in a DeliveryError once it has been sent.
func (pp *partProducer) closedErr(b *pbatch) error {
	if b.attempts == 0 {
		return ErrProducerClosed
	}
	return &DeliveryError{Topic: pp.topic, Partition: pp.part, Attempts: b.attempts, Unknown: b.unknown, Err: ErrProducerClosed}
}

// backoff is the delay before retry number attempt: RetryBackoff doubled
// per attempt up to RetryBackoffMax, ±20% jitter.
func (p *Producer) backoff(attempt int) time.Duration {
	if attempt <= 0 {
		return 0
	}
	d := p.cfg.RetryBackoff
	for i := 1; i < attempt && d < p.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	d = min(d, p.cfg.RetryBackoffMax)
	return d*4/5 + rand.N(d*2/5+1)
}
