package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

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
		// spare holds builders of resolved batches for the next ones. Kept
		// here rather than only in builderPool, which every other garbage
		// collection empties: a new builder sized from lastLen grows
		// (copying what it holds) whenever a batch outgrows the last one.
		spare []*segment.Builder
	}

	// Owned by run.
	// Invariant: queue holds encoded batches first, in order, then unencoded ones.
	queue    []*pbatch
	inflight []*pbatch // sent and unresolved, in send order
	// lastWrite is closed once the last request sent has been written to
	// its stream (quic.WriteAfter): the next one is written after it.
	lastWrite  <-chan struct{}
	recovering bool // after an error: no sends until inflight drains and retryAt passes
	probe      bool // after a recovery with resends: one request at a time until a success
	needMeta   bool
	behind     int // UnknownLeaderEpoch answers in a row from the leader the metadata names
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
func (pp *partProducer) append(r *Record, ts int64, size int, gen uint64, cb DeliveryHandler) {
	cfg := &pp.p.cfg
	// The topic's max.message.bytes, when lower, bounds the batch (the
	// estimate counts every record at its widest, so the batch is no
	// larger; a record too large alone was refused by Produce).
	batchBytes := cfg.BatchBytes
	if limit := pp.p.c.meta.current().maxMessageBytes(pp.topic); limit > 0 && limit < batchBytes {
		batchBytes = limit
	}
	wake := false
	pp.mu.Lock()
	b := pp.mu.open
	if b != nil && b.size+size > batchBytes {
		pp.closeOpenLocked()
		b, wake = nil, true
	}
	if b == nil {
		var bld *segment.Builder
		if n := len(pp.mu.spare); n > 0 {
			bld = pp.mu.spare[n-1]
			pp.mu.spare[n-1] = nil
			pp.mu.spare = pp.mu.spare[:n-1]
			pp.p.spareBytes.Add(-int64(bld.Cap()))
		}
		// A quarter more than the last batch: a batch that outgrows its
		// buffer copies what it holds.
		capHint := min(batchBytes, max(2*size+1024, pp.mu.lastLen+pp.mu.lastLen/4))
		b = newBatch(bld, capHint, batchBytes, max(8, pp.mu.lastRecs), time.Now(), cfg.DeliveryTimeout)
		pp.mu.open = b
		wake = true // arms the linger timer
	}
	b.add(r, ts, size, gen, cb)
	if b.size >= batchBytes {
		pp.closeOpenLocked()
		wake = true
	}
	pp.mu.Unlock()
	if wake {
		pp.signal()
	}
}

// spareBuilders bounds the builders a partition keeps: one per request in
// flight and one filling covers a steady stream.
const spareBuilders = 4

// keepBuilder keeps bld, no longer used by any batch, for the partition's
// next batches while the producer's spares stay within half of its buffer
// budget, or else gives it to the shared pool.
func (pp *partProducer) keepBuilder(bld *segment.Builder) {
	size := int64(bld.Cap())
	pp.mu.Lock()
	keep := len(pp.mu.spare) < spareBuilders
	if keep && pp.p.spareBytes.Add(size) > pp.p.cfg.BufferBytes/2 {
		pp.p.spareBytes.Add(-size)
		keep = false
	}
	if keep {
		pp.mu.spare = append(pp.mu.spare, bld)
		bld = nil
	}
	pp.mu.Unlock()
	if bld != nil {
		builderPool.Put(bld)
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

// stalledHedge is the hedge delay of the metadata refreshes a partition's
// trouble asks for: half the leader check interval, at most HedgeDelay.
func (p *Producer) stalledHedge() time.Duration {
	return min(p.cfg.LeaderCheckInterval/2, p.c.cfg.HedgeDelay)
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
			// With the short hedge of a stalled request (checkLeaders):
			// the node asked first is the one whose answer was last news,
			// often the leader that just refused or dropped this
			// partition's requests. In a rolling restart that node is
			// stopping: asked first with the usual 300 ms hedge, it held
			// the resend up until it answered again, restarted (~200 ms).
			_ = pp.p.c.meta.refreshHedged(ctx, pp.p.stalledHedge())
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
		if parts := pp.splitForLimit(b); parts != nil {
			pp.queue = append(parts, pp.queue[1:]...)
			continue
		}
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
