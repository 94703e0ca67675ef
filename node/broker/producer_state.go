package broker

import "math"

// producerBatches is how many batches per producer and partition are
// remembered for duplicate detection (Kafka's
// max.in.flight.requests.per.connection for idempotent producers).
const producerBatches = 5

// seqBatch is one remembered batch of an idempotent producer.
type seqBatch struct {
	firstSeq, lastSeq      int32
	baseOffset, lastOffset int64
}

// producerEntry is the state of one producer id on one partition.
type producerEntry struct {
	epoch int16
	// lastTs is the largest record timestamp (ms) of its batches, for
	// expiry (producerState.expire); -1: not known (a version 1 snapshot).
	lastTs int64
	// batches is a ring of the last producerBatches batches, oldest first.
	batches []seqBatch
}

// producerState is the idempotent-producer state of one partition. It is
// rebuilt from batch headers when the log is opened and updated on every
// append (leader or follower), so it survives leader changes and restarts.
// A truncation rolls it back without reading the log (truncate) as long as
// the cut is not below stableEnd. Not safe for concurrent use: guarded by
// the partition's appendMu.
type producerState struct {
	// producers is the state of the whole log.
	producers map[int64]*producerEntry
	// stable is the state of the log below stableEnd (a batch boundary),
	// and pending the batches from stableEnd to the log end, in log order:
	// producers is stable with pending applied. Batches move from pending
	// to stable once below the HW (advance), where a truncation does not
	// cut (a new leader has every committed record).
	// Invariant: every entry of pending has baseOffset >= stableEnd.
	stable    map[int64]*producerEntry
	stableEnd int64
	pending   []pendingBatch
	// stableBatches counts the batches moved to stable (to pace snapshots).
	stableBatches uint64
	// unknown, when set, says the state could not be rebuilt after a
	// truncation (the log could not be read): what it held before may name
	// batches that are gone, and what it would hold is not known. Every
	// idempotent batch is then refused, retriably (seqUnknown), until a
	// later truncation or a reopen replays the log.
	unknown error
}

// pendingBatch is one appended batch of an idempotent producer not yet in
// producerState.stable.
type pendingBatch struct {
	pid             int64
	epoch           int16
	firstSeq, delta int32
	baseOffset      int64
	maxTs           int64 // the batch's MaxTimestamp
}

func (b pendingBatch) lastOffset() int64 { return b.baseOffset + int64(b.delta) }

// unknownProducerState is the state of a partition whose producer state
// could not be rebuilt (producerState.unknown).
func unknownProducerState(err error) *producerState {
	s := newProducerState()
	s.unknown = err
	return s
}

func newProducerState() *producerState {
	return &producerState{producers: make(map[int64]*producerEntry), stable: make(map[int64]*producerEntry)}
}

// seqVerdict is the outcome of checking a batch's sequence.
type seqVerdict uint8

const (
	seqOK              seqVerdict = iota // append it
	seqDuplicate                         // a retry of a remembered batch: answer with its offsets
	seqOutOfOrder                        // a gap or an unknown old batch
	seqUnknownProducer                   // no state for the producer id, and not sequence 0 (producer_expiry.go)
	seqInvalidEpoch                      // an older producer epoch (a fenced zombie producer)
	seqUnknown                           // the state is unknown (producerState.unknown)
)

// nextSeq is seq+1 wrapping at MaxInt32 like Kafka.
func nextSeq(seq int32, n int32) int32 {
	if int64(seq)+int64(n) > math.MaxInt32 {
		return int32(int64(seq) + int64(n) - math.MaxInt32 - 1)
	}
	return seq + n
}

// check classifies a batch of producer pid, epoch, sequences
// [firstSeq, firstSeq+lastOffsetDelta]. For a duplicate it returns the
// original batch.
func (s *producerState) check(pid int64, epoch int16, firstSeq, lastOffsetDelta int32) (seqVerdict, seqBatch) {
	if s.unknown != nil {
		return seqUnknown, seqBatch{}
	}
	e := s.producers[pid]
	switch {
	case e == nil && firstSeq != 0:
		return seqUnknownProducer, seqBatch{}
	case e == nil || epoch > e.epoch:
		// A new producer, or a new epoch of it, starts at sequence 0.
		if firstSeq != 0 {
			return seqOutOfOrder, seqBatch{}
		}
		return seqOK, seqBatch{}
	case epoch < e.epoch:
		return seqInvalidEpoch, seqBatch{}
	}
	lastSeq := nextSeq(firstSeq, lastOffsetDelta)
	for _, b := range e.batches {
		if b.firstSeq == firstSeq && b.lastSeq == lastSeq {
			return seqDuplicate, b
		}
	}
	if len(e.batches) == 0 {
		if firstSeq == 0 {
			return seqOK, seqBatch{}
		}
		return seqOutOfOrder, seqBatch{}
	}
	if firstSeq == nextSeq(e.batches[len(e.batches)-1].lastSeq, 1) {
		return seqOK, seqBatch{}
	}
	for _, b := range e.batches {
		// A retry of part of a remembered batch: of one batch of a run
		// the log cleaner emptied and merged into one (segment's emptyRun),
		// which a restart or a follower's copy remembers as that one. A
		// batch's sequence numbers are at the offsets that go with them.
		if b.firstSeq <= b.lastSeq && firstSeq <= lastSeq && b.firstSeq <= firstSeq && lastSeq <= b.lastSeq {
			base := b.baseOffset + int64(firstSeq-b.firstSeq)
			return seqDuplicate, seqBatch{firstSeq: firstSeq, lastSeq: lastSeq, baseOffset: base, lastOffset: base + int64(lastOffsetDelta)}
		}
	}
	return seqOutOfOrder, seqBatch{}
}

// update records an appended batch (after check said seqOK, or while
// replaying the log or copying a leader's batches, where it is trusted).
// Batches must come in log order.
func (s *producerState) update(pid int64, epoch int16, firstSeq, lastOffsetDelta int32, baseOffset, maxTs int64) {
	if pid < 0 || firstSeq < 0 || s.unknown != nil {
		return
	}
	// A negative timestamp (a client's) counts as very old, not unknown.
	b := pendingBatch{pid: pid, epoch: epoch, firstSeq: firstSeq, delta: lastOffsetDelta, baseOffset: baseOffset, maxTs: max(maxTs, 0)}
	applyBatch(s.producers, b)
	s.pending = append(s.pending, b)
	if len(s.pending) >= 2*maxPendingBatches {
		// The HW is stuck: give up rolling back that far without the log
		// (half of them at once, so that this is rare).
		s.advance(s.pending[maxPendingBatches].baseOffset)
	}
}

// applyBatch records b in m.
func applyBatch(m map[int64]*producerEntry, b pendingBatch) {
	e := m[b.pid]
	if e == nil {
		e = &producerEntry{epoch: b.epoch, lastTs: b.maxTs}
		m[b.pid] = e
	}
	e.lastTs = max(e.lastTs, b.maxTs)
	if b.epoch > e.epoch {
		e.epoch, e.batches = b.epoch, e.batches[:0]
	}
	if len(e.batches) == producerBatches {
		copy(e.batches, e.batches[1:])
		e.batches = e.batches[:producerBatches-1]
	}
	e.batches = append(e.batches, seqBatch{firstSeq: b.firstSeq, lastSeq: nextSeq(b.firstSeq, b.delta),
		baseOffset: b.baseOffset, lastOffset: b.lastOffset()})
}
