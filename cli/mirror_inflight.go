package cli

import (
	"slices"
	"sync"

	"paymentlog/client"
)

// The mirror's bookkeeping of what the target acknowledged, per source
// partition, from which it derives the offset it may commit on the source
// (at least once: never past a record the target has not acknowledged).
// It does no I/O: the poll loop reports records handed to the producer,
// the producer's callbacks report acknowledgements and failures, and the
// group consumer's CommitAt asks for the commit point.

// partInflight is one source partition's records handed to the target's
// producer and not yet acknowledged.
type partInflight struct {
	// pending are the offsets handed over, ascending, from the first one
	// not yet acknowledged; done marks those acknowledged out of order.
	// Invariant: pending[0] is not done (when pending is not empty).
	pending []inflightRecord
	// ceiling is the first offset Poll returned that was not handed over
	// (the run stopped first, or the producer refused it) or whose
	// delivery failed; -1 while there is none. Nothing at or past it is
	// ever committed by this run.
	ceiling int64
	// syncs decides the partition's offset syncs from the records
	// acknowledged, in order (mirror_offset_syncs.go).
	syncs partSyncs
}

type inflightRecord struct {
	offset int64
	target int64 // where the target wrote it, once done
	done   bool
}

// sent records that the record at offset was handed to the producer.
// Offsets of one partition come in ascending order.
func (p *partInflight) sent(offset int64) {
	p.pending = append(p.pending, inflightRecord{offset: offset})
}

// acked records the target's acknowledgement of the record at offset,
// written there at target. Each record of the prefix so acknowledged is
// reported to fn, in order (fn may be nil).
func (p *partInflight) acked(offset, target int64, fn func(offset, target int64)) {
	i, ok := slices.BinarySearchFunc(p.pending, offset, func(r inflightRecord, o int64) int {
		switch {
		case r.offset < o:
			return -1
		case r.offset > o:
			return 1
		}
		return 0
	})
	if !ok {
		return // forgotten (released) or already popped
	}
	p.pending[i].done, p.pending[i].target = true, target
	n := 0
	for n < len(p.pending) && p.pending[n].done {
		if fn != nil {
			fn(p.pending[n].offset, p.pending[n].target)
		}
		n++
	}
	if n > 0 {
		p.pending = p.pending[n:]
		if len(p.pending) == 0 {
			p.pending = nil // let the backing array go
		}
	}
}

// stopAt lowers the ceiling to offset.
func (p *partInflight) stopAt(offset int64) {
	if p.ceiling < 0 || offset < p.ceiling {
		p.ceiling = offset
	}
}

// commitPoint is the offset to commit for a partition whose consumer
// position (the offset after the last record Poll returned) is position:
// the first record not acknowledged, capped by the ceiling; position when
// every record Poll returned was acknowledged (or skipped). -1: nothing
// to commit (position unknown).
func (p *partInflight) commitPoint(position int64) int64 {
	c := position
	if len(p.pending) > 0 {
		c = p.pending[0].offset
	}
	if p.ceiling >= 0 && p.ceiling < c {
		c = p.ceiling
	}
	return c
}

// inflight is partInflight for every partition the mirror owns, safe for
// the poll loop and the producer's callbacks at once.
type inflight struct {
	mu struct {
		sync.Mutex
		parts map[client.TopicPartition]*partInflight
		// failure is the first delivery that failed, for the poll loop
		// to stop the run with.
		failure error
		// records and bytes count the records acknowledged (bytes:
		// their keys, values and headers, client.RecordBytes).
		records, bytes int64
		// syncs are the offset syncs decided and not yet taken
		// (takeSyncs); only with withSyncs.
		syncs []offsetSync
	}
	withSyncs bool
}

// newInflight returns empty bookkeeping; withSyncs makes it decide offset
// syncs (takeSyncs).
func newInflight(withSyncs bool) *inflight {
	f := &inflight{withSyncs: withSyncs}
	f.mu.parts = map[client.TopicPartition]*partInflight{}
	return f
}

// partLocked returns tp's state, creating it.
func (f *inflight) partLocked(tp client.TopicPartition) *partInflight {
	p, ok := f.mu.parts[tp]
	if !ok {
		p = &partInflight{ceiling: -1}
		f.mu.parts[tp] = p
	}
	return p
}

func (f *inflight) sent(tp client.TopicPartition, offset int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partLocked(tp).sent(offset)
}

// delivered records the outcome of the record at offset (err nil: the
// target acknowledged it at target; size is its client.RecordBytes).
func (f *inflight) delivered(tp client.TopicPartition, offset, target int64, size int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil && f.mu.failure == nil {
		f.mu.failure = err
	}
	p, ok := f.mu.parts[tp]
	if !ok {
		return // released meanwhile (its commit did not count on it)
	}
	if err != nil {
		p.stopAt(offset)
		return
	}
	var fn func(offset, target int64)
	if f.withSyncs && target >= 0 {
		fn = func(o, t int64) { f.mu.syncs = p.syncs.record(tp, o, t, f.mu.syncs) }
	}
	p.acked(offset, target, fn)
	f.mu.records++
	f.mu.bytes += int64(size)
}

// notSent records that the record at offset, returned by Poll, was not
// handed to the producer.
func (f *inflight) notSent(tp client.TopicPartition, offset int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.partLocked(tp).stopAt(offset)
}

// commitPoint is partInflight.commitPoint of tp (position when the mirror
// has handed nothing of tp over).
func (f *inflight) commitPoint(tp client.TopicPartition, position int64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.mu.parts[tp]; ok {
		return p.commitPoint(position)
	}
	return position
}

// pending counts tp's records not yet acknowledged.
func (f *inflight) pending(tp client.TopicPartition) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p, ok := f.mu.parts[tp]; ok {
		return len(p.pending)
	}
	return 0
}

// forget drops what is kept of tps (released: committed already), after
// deciding each one's last offset sync (partSyncs.flush).
func (f *inflight) forget(tps []client.TopicPartition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, tp := range tps {
		if p, ok := f.mu.parts[tp]; ok && f.withSyncs {
			f.mu.syncs = p.syncs.flush(f.mu.syncs)
		}
		delete(f.mu.parts, tp)
	}
}

// takeSyncs returns the offset syncs decided since the last call; with
// flush, also each partition's sync after its last record acknowledged
// (partSyncs.flush).
func (f *inflight) takeSyncs(flush bool) []offsetSync {
	f.mu.Lock()
	defer f.mu.Unlock()
	if flush {
		for _, p := range f.mu.parts {
			f.mu.syncs = p.syncs.flush(f.mu.syncs)
		}
	}
	out := f.mu.syncs
	f.mu.syncs = nil
	return out
}

// failure is the first delivery failure, or nil.
func (f *inflight) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.failure
}

// totals are the records and bytes acknowledged so far.
func (f *inflight) totals() (records, bytes int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.records, f.mu.bytes
}
