package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// requestGrace is added to the leader-side request timeout for the client's own deadline.
const requestGrace = 2 * time.Second

// maxHeadOOS is how many OutOfOrderSequence answers the oldest unresolved
// batch may get (each after a metadata refresh and a backoff) before the
// partition's sequence is declared broken and restarted under a new identity
// (renewIdentity). A leader that does not know the producer id at all answers
// UnknownProducerID instead, which restarts it at once.
const maxHeadOOS = 3

// attemptResult is one Produce attempt's outcome, sent back to the partition's goroutine.
type attemptResult struct {
	b    *pbatch
	resp wire.ProducePartitionResponse
	err  error // transport error: outcome unknown
}

// gap marks a batch encoded under id that failed for good: batches encoded
// after it under the same identity would be refused (their sequences no
// longer follow on), so they are re-encoded under a new identity
// (renewIdentity) before they are sent again.
type gap struct {
	order      int64 // batches with a larger order and the same identity need the reset
	id         producerIdentity
	definitive bool // the failed batch certainly was not written
	err        error
}

// partProducer sends one partition's batches. Produce appends records under
// mu; everything else is owned by the run goroutine.
type partProducer struct {
	p       *Producer
	topic   string
	part    int32
	wake    chan struct{}      // cap 1
	results chan attemptResult // cap MaxInFlight: one slot per request in flight

	mu struct {
		sync.Mutex
		open     *pbatch   // accepting records
		closed   []*pbatch // full, waiting for run to take them
		lastLen  int       // encoded bytes of the last closed batch: sizes the next one
		lastRecs int       // records in it
	}

	// Owned by run.
	// Invariant: queue holds encoded batches first, in order, then unencoded ones.
	queue      []*pbatch
	inflight   []*pbatch // sent and unresolved, in send order
	recovering bool      // after an error: no sends until inflight drains and retryAt passes
	probe      bool      // after a recovery with resends: one request at a time until a success
	needMeta   bool
	retryAt    time.Time
	havePID    bool
	id         producerIdentity
	nextSeq    int32
	order      int64
	gap        *gap
	noLeader   int       // consecutive pumps that found no leader: grows the backoff
	checkedAt  time.Time // the last leader check that refreshed the metadata
	timer      *time.Timer
}

func newPartProducer(p *Producer, topic string, part int32) *partProducer {
	return &partProducer{
		p:       p,
		topic:   topic,
		part:    part,
		wake:    make(chan struct{}, 1),
		results: make(chan attemptResult, p.cfg.MaxInFlight),
		id:      noIdentity,
	}
}

func (pp *partProducer) signal() {
	select {
	case pp.wake <- struct{}{}:
	default:
	}
}

// append adds a record to the open batch, closing it first if the record
// would overflow it, and after if it is full.
func (pp *partProducer) append(r *Record, ts int64, size int, gen uint64, cb func(Delivery)) {
	cfg := &pp.p.cfg
	wake := false
	pp.mu.Lock()
	b := pp.mu.open
	if b != nil && b.size+size > cfg.BatchBytes {
		pp.closeOpenLocked()
		b, wake = nil, true
	}
	if b == nil {
		b = newBatch(min(cfg.BatchBytes, max(2*size+1024, pp.mu.lastLen)), max(8, pp.mu.lastRecs), time.Now(), cfg.DeliveryTimeout)
		pp.mu.open = b
		wake = true // arms the linger timer
	}
	b.add(r, ts, size, gen, cb)
	if b.size >= cfg.BatchBytes {
		pp.closeOpenLocked()
		wake = true
	}
	pp.mu.Unlock()
	if wake {
		pp.signal()
	}
}

// closeOpenLocked moves the open batch to closed.
func (pp *partProducer) closeOpenLocked() {
	b := pp.mu.open
	pp.mu.closed = append(pp.mu.closed, b)
	pp.mu.open = nil
	pp.mu.lastLen, pp.mu.lastRecs = b.bld.Size(), b.records()
}

func (pp *partProducer) run() {
	pp.timer = time.NewTimer(time.Hour)
	defer pp.timer.Stop()
	for {
		now := time.Now()
		pp.pump(now)
		pp.armTimer(now)
		var metaChanged <-chan struct{}
		if len(pp.inflight) > 0 {
			metaChanged = pp.p.c.meta.changed()
		}
		select {
		case <-pp.wake:
		case r := <-pp.results:
			pp.handle(r)
		case <-pp.timer.C:
			pp.checkLeaders(time.Now(), true)
		case <-metaChanged:
			pp.checkLeaders(time.Now(), false)
		case <-pp.p.stop:
			pp.abort()
			return
		}
		for drained := false; !drained; {
			select {
			case r := <-pp.results:
				pp.handle(r)
			default:
				drained = true
			}
		}
	}
}

// armTimer sets the timer to the next moment something is due (nextWake).
func (pp *partProducer) armTimer(now time.Time) {
	at := pp.nextWake()
	if at.IsZero() {
		pp.timer.Stop()
		return
	}
	pp.timer.Reset(max(at.Sub(now), time.Millisecond))
}

// nextWake returns the next moment something is due, or the zero time if
// nothing is: the open batch's linger, the end of a retry backoff, a leader
// check, or the earliest delivery deadline of a queued batch (expire fails
// it; batches in flight are not expired, so their deadlines are not woken for).
func (pp *partProducer) nextWake() time.Time {
	var at time.Time
	consider := func(t time.Time) {
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	if len(pp.inflight) > 0 {
		// The first check once the oldest request has been out for
		// LeaderCheckInterval, then one per half interval (what
		// checkLeaders refreshes at): not at once again, which spun the
		// loop every millisecond for as long as a request was slow.
		ivl := pp.p.cfg.LeaderCheckInterval
		at := pp.inflight[0].sentAt.Add(ivl)
		if next := pp.checkedAt.Add(ivl / 2); next.After(at) {
			at = next
		}
		consider(at)
	}
	if pp.recovering && len(pp.inflight) == 0 {
		consider(pp.retryAt)
	}
	if !pp.recovering && len(pp.queue) == 0 && len(pp.inflight) < pp.limit() {
		pp.mu.Lock()
		if pp.mu.open != nil {
			consider(pp.mu.open.created.Add(pp.p.cfg.Linger))
		}
		pp.mu.Unlock()
	}
	for _, b := range pp.queue {
		consider(b.deadline)
	}
	return at
}

func (pp *partProducer) limit() int {
	if pp.probe {
		return 1
	}
	return pp.p.cfg.MaxInFlight
}

func (pp *partProducer) idempotent() bool { return pp.p.cfg.idempotent() }

// takeReady moves closed batches into the queue, and the open one too when
// it has lingered long enough (or a flush is waiting) and nothing else is queued.
func (pp *partProducer) takeReady(now time.Time) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.takeClosedLocked()
	if o := pp.mu.open; o != nil && len(pp.queue) == 0 &&
		(pp.p.flushing.Load() > 0 || !now.Before(o.created.Add(pp.p.cfg.Linger))) {
		pp.queue = append(pp.queue, o)
		pp.mu.open = nil
		pp.mu.lastLen, pp.mu.lastRecs = o.bld.Size(), o.records()
	}
}

// takeClosed moves closed batches into the queue (the open one keeps
// taking records until takeReady finds a use for it).
func (pp *partProducer) takeClosed() {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.takeClosedLocked()
}

func (pp *partProducer) takeClosedLocked() {
	pp.queue = append(pp.queue, pp.mu.closed...)
	clear(pp.mu.closed)
	pp.mu.closed = pp.mu.closed[:0]
}

// pump fails the queued batches past their delivery deadline, then sends
// what may be sent now.
func (pp *partProducer) pump(now time.Time) {
	pp.takeClosed()
	pp.expire(now)
	if pp.recovering {
		if len(pp.inflight) > 0 || now.Before(pp.retryAt) {
			pp.takeReady(now)
			return
		}
		if pp.needMeta {
			pp.needMeta = false
			ctx, cancel := context.WithTimeout(pp.p.ctx, pp.p.c.cfg.MetadataTimeout)
			_ = pp.p.c.meta.refresh(ctx)
			cancel()
			now = time.Now()
		}
		pp.recovering = false
		pp.probe = len(pp.queue) > 0 && pp.queue[0].encoded != nil
	}
	for !pp.recovering && len(pp.inflight) < pp.limit() {
		if len(pp.queue) == 0 {
			pp.takeReady(now)
			if len(pp.queue) == 0 {
				return
			}
		}
		b := pp.queue[0]
		if now.After(b.deadline) { // now moved on (a metadata refresh)
			pp.expire(now)
			continue
		}
		if pp.idempotent() {
			if b.encoded != nil && pp.gap != nil && b.id == pp.gap.id && b.order > pp.gap.order {
				if len(pp.inflight) > 0 {
					return // reset only once nothing is in flight
				}
				if !pp.renewIdentity(now) {
					return
				}
				continue
			}
			if b.encoded == nil && pp.gap != nil && pp.gap.id == pp.id {
				// Sequences under this id stop at the gap: restart before
				// encoding rather than be refused with OutOfOrderSequence.
				if len(pp.inflight) > 0 {
					return
				}
				if !pp.renewIdentity(now) {
					return
				}
				continue
			}
			if b.encoded == nil {
				if !pp.havePID && !pp.ensurePID(now) {
					return
				}
				if lo, ok := pp.oldestUnresolved(); ok && pp.order-lo >= MaxInFlightIdempotent {
					return // the leader remembers only the last 5 batches: keep the window there
				}
			}
		}
		ld, ok := pp.p.c.meta.current().leaderOf(pp.topic, pp.part)
		if !ok {
			pp.noLeader++
			pp.needMeta = true
			pp.enterRecovery(now, max(b.attempts, pp.noLeader))
			return
		}
		pp.noLeader = 0
		if b.encoded == nil {
			pp.encode(b)
		}
		pp.queue = pp.queue[1:]
		pp.send(b, ld, now)
	}
}

// expire fails every queued batch past its delivery deadline, all in one
// go. Only queued batches expire here: one in flight may be written, so it
// waits for its answer (retry fails it then). A queued batch fails as any
// batch failing for good does (terminal): one that certainly was not written
// leaves a sequence gap that the later batches are re-encoded over, and the
// partition passes through recovery (immediately once nothing is in flight)
// before it sends again.
func (pp *partProducer) expire(now time.Time) {
	kept := pp.queue[:0]
	var expired []*pbatch
	for _, b := range pp.queue {
		if now.After(b.deadline) {
			expired = append(expired, b)
		} else {
			kept = append(kept, b)
		}
	}
	if len(expired) == 0 {
		return
	}
	clear(pp.queue[len(kept):])
	pp.queue = kept
	for _, b := range expired {
		err := b.lastErr
		if err == nil {
			err = errors.New("no attempt completed")
		}
		pp.terminal(b, fmt.Errorf("%w: %w", ErrDeliveryTimeout, err), !b.unknown, now)
	}
}

// oldestUnresolved returns the smallest order of an encoded, unresolved batch.
func (pp *partProducer) oldestUnresolved() (int64, bool) {
	lo, ok := int64(math.MaxInt64), false
	for _, b := range pp.inflight {
		if b.id == pp.id && b.order < lo {
			lo, ok = b.order, true
		}
	}
	for _, b := range pp.queue {
		if b.encoded == nil {
			break
		}
		if b.id == pp.id && b.order < lo {
			lo, ok = b.order, true
		}
	}
	return lo, ok
}

func (pp *partProducer) ensurePID(now time.Time) bool {
	ctx, cancel := context.WithTimeout(pp.p.ctx, pp.p.c.cfg.RequestTimeout)
	pid, epoch, err := pp.p.producerID(ctx)
	cancel()
	if err != nil {
		pp.p.c.log.Warn("producer id unavailable", "topic", pp.topic, "partition", pp.part, "err", err)
		if len(pp.queue) > 0 {
			pp.queue[0].lastErr = err
		}
		pp.enterRecovery(now, 3)
		return false
	}
	pp.id, pp.havePID, pp.nextSeq = producerIdentity{pid: pid, epoch: epoch}, true, 0
	return true
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
	opts := segment.BuilderOptions{}
	if pp.idempotent() {
		opts = segment.BuilderOptions{ProducerID: pp.id.pid, ProducerEpoch: pp.id.epoch, BaseSequence: pp.nextSeq}
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
	go func() {
		var resp wire.ProduceResponse
		r := attemptResult{b: b}
		r.err = pp.p.c.call(ctx, ld.addr, wire.TypeProduce, req, &resp)
		if r.err == nil {
			r.err = errMalformedResponse
			for _, pr := range resp.Parts {
				if pr.Partition == pp.part {
					r.resp, r.err = pr, nil
					break
				}
			}
		}
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

// retry queues b for a resend after the partition recovers.
func (pp *partProducer) retry(b *pbatch, now time.Time, err error, unknown, needMeta bool) {
	b.lastErr = err
	b.unknown = b.unknown || unknown
	pp.needMeta = pp.needMeta || needMeta
	if now.After(b.deadline) {
		pp.terminal(b, fmt.Errorf("%w: %w", ErrDeliveryTimeout, err), !b.unknown, now)
		return
	}
	pp.insertQueue(b)
	pp.enterRecovery(now, b.attempts)
}

// retryNow queues b for a resend without a backoff.
func (pp *partProducer) retryNow(b *pbatch, now time.Time, err error) {
	b.lastErr = err
	if now.After(b.deadline) {
		pp.terminal(b, fmt.Errorf("%w: %w", ErrDeliveryTimeout, err), !b.unknown, now)
		return
	}
	pp.insertQueue(b)
	pp.enterRecovery(now, 0)
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
	at := now.Add(pp.p.backoff(attempts))
	if !pp.recovering || at.After(pp.retryAt) {
		pp.retryAt = at
	}
	pp.recovering = true
}

func (pp *partProducer) succeed(b *pbatch, base int64) {
	pp.probe = false
	pp.finish(b, base, nil)
}

// finish resolves b: callbacks, then its budget is released.
func (pp *partProducer) finish(b *pbatch, base int64, err error) {
	b.deliver(pp.topic, pp.part, base, err)
	pp.p.budget.release(b.budgetBytes(), b.gens)
	b.release()
}

// checkLeaders abandons requests sent to a leader the metadata says has been
// replaced. On the timer it also asks for fresher metadata when a request has
// been outstanding for LeaderCheckInterval.
func (pp *partProducer) checkLeaders(now time.Time, refresh bool) {
	if len(pp.inflight) == 0 {
		return
	}
	ivl := pp.p.cfg.LeaderCheckInterval
	if refresh && now.Sub(pp.inflight[0].sentAt) >= ivl {
		pp.checkedAt = now
		pp.p.c.meta.refreshIfOlderHedged(ivl/2, min(ivl/2, pp.p.c.cfg.HedgeDelay))
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
