package broker

import (
	"context"
	"math"
	"time"
)

// Produce requests travel on QUIC streams of their own, and the leader
// serves each on its own goroutine, so two requests an idempotent producer
// sent in order, for one partition, may reach the partition's append in
// the other order (Kafka's TCP connection and one-request-at-a-time
// processing keep them in order). The later batch's sequence is then
// ahead of what the leader has: refused at once (OutOfOrderSequence, or
// UnknownProducerID for a producer whose first batch has not arrived
// yet), it costs the producer a resend of it and of every batch after it,
// a round trip or more, and for a new producer or epoch a restart of its
// sequence under the next epoch. A batch whose sequence is ahead instead
// waits, at most ReorderWait in all, for appends to the partition (the
// earlier batch is usually a stream behind, well under a millisecond),
// and is checked again after each; still ahead when the wait is up, it
// is refused as before. A true gap (an earlier batch lost or failed: a
// batch refused as too large, which its producer splits, say) costs its
// refusal that wait.
//
// A producer's first batches (sequence 0 of its id or epoch not here yet)
// wait up to ReorderWaitFirst: a new producer's first requests are its
// largest (a full batch for every partition the node leads) and QUIC
// sends streams side by side, so a later, smaller request can finish
// first by more than ReorderWait while the connection is young. In bench
// throughput on a busy machine, of ~40 batches that waited at the start,
// all were still ahead after 25 ms, about half after 100 ms, and 0–5
// after 250 ms. Refused, such a batch costs more than the wait would: its
// producer resends only once every request in flight has answered, and
// restarts its sequence under a new epoch.
//
// Nothing else waits, and appends pay only
// a nil check: the channel exists from a batch's wait to the next append.

// DefaultReorderWait bounds how long a batch ahead of its producer's
// sequence waits for the batches before it (Config.ReorderWait);
// DefaultReorderWaitFirst when what it waits for is the producer's sequence
// 0, of its id or of a new epoch (Config.ReorderWaitFirst).
const (
	DefaultReorderWait      = 25 * time.Millisecond
	DefaultReorderWaitFirst = 250 * time.Millisecond
)

// aheadKind is what a batch ahead of its producer's sequence waits for.
type aheadKind uint8

const (
	notAhead     aheadKind = iota
	aheadOfKnown           // earlier batches of a producer the partition knows
	aheadOfFirst           // the producer's sequence 0, of its id or of a new epoch
)

// reorderWait is how long a batch ahead of its producer's sequence waits
// (0: not ahead, refused at once).
func (b *Broker) reorderWait(k aheadKind) time.Duration {
	switch k {
	case aheadOfKnown:
		return b.cfg.ReorderWait
	case aheadOfFirst:
		return b.cfg.ReorderWaitFirst
	}
	return 0
}

// nextAppendLocked returns a channel the partition's next leader append
// closes. appendMu held.
func (p *partition) nextAppendLocked() <-chan struct{} {
	if p.reordered == nil {
		p.reordered = make(chan struct{})
	}
	return p.reordered
}

// appendedLocked wakes the batches waiting for an append. appendMu held.
func (p *partition) appendedLocked() {
	if p.reordered != nil {
		close(p.reordered)
		p.reordered = nil
	}
}

// awaitEarlier waits until earlier is closed (true: check the batch
// again), or until or ctx's end (false).
func (p *partition) awaitEarlier(ctx context.Context, earlier <-chan struct{}, until time.Time) bool {
	d := time.Until(until)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-earlier:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// ahead says whether a batch of producer pid at epoch starting at
// firstSeq, which check refused as out of order or of an unknown
// producer, is ahead of the producer's sequence here: batches before it
// may still come (they are not yet here), so it may be accepted after
// them. It returns what such a batch waits for (notAhead: refuse it now).
func (s *producerState) ahead(pid int64, epoch int16, firstSeq int32) aheadKind {
	if s.unknown != nil || firstSeq < 0 {
		return notAhead
	}
	e := s.producers[pid]
	switch {
	case e == nil || epoch > e.epoch || len(e.batches) == 0:
		// A new producer, or a new epoch of it, starts at sequence 0.
		if firstSeq > 0 && (e == nil || epoch >= e.epoch) {
			return aheadOfFirst
		}
		return notAhead
	case epoch < e.epoch:
		return notAhead
	}
	next := nextSeq(e.batches[len(e.batches)-1].lastSeq, 1)
	// Sequences wrap at MaxInt32: the distance forward from next, mod 2^31.
	d := (int64(firstSeq) - int64(next) + math.MaxInt32 + 1) % (math.MaxInt32 + 1)
	if d > 0 && d < 1<<30 {
		return aheadOfKnown
	}
	return notAhead
}
