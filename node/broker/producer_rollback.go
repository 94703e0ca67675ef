package broker

import "slices"

// maxPendingBatches bounds producerState.pending: at twice as many, the
// oldest half moves to the stable state even above the HW (a truncation
// below them then replays the log instead).
const maxPendingBatches = 1 << 16

// advance moves the pending batches that end below hw into the stable
// state: a truncation does not cut below the HW.
func (s *producerState) advance(hw int64) {
	n := 0
	for n < len(s.pending) && s.pending[n].lastOffset() < hw {
		applyBatch(s.stable, s.pending[n])
		s.stableEnd = s.pending[n].lastOffset() + 1
		n++
	}
	s.stableBatches += uint64(n)
	s.pending = s.pending[n:]
	if cap(s.pending) > 64 && len(s.pending) < cap(s.pending)/4 {
		// Reslicing alone would keep the moved batches' array alive and
		// let it grow with every append: copy what is left.
		s.pending = slices.Clone(s.pending)
	}
}

// truncate rolls the state back to a log whose end is now leo (a batch
// boundary), without reading the log: the producers of the removed pending
// batches get their stable state with their remaining pending batches
// applied again. It reports false, changing nothing, when leo is below
// stableEnd, or the state is unknown: then only a replay of the log can
// rebuild the state.
func (s *producerState) truncate(leo int64) bool {
	if leo < s.stableEnd || s.unknown != nil {
		return false
	}
	i := len(s.pending)
	for i > 0 && s.pending[i-1].lastOffset() >= leo {
		i--
	}
	if i == len(s.pending) {
		return true
	}
	affected := make(map[int64]bool)
	for _, b := range s.pending[i:] {
		affected[b.pid] = true
	}
	s.pending = s.pending[:i]
	for pid := range affected {
		if e := s.stable[pid]; e != nil {
			s.producers[pid] = &producerEntry{epoch: e.epoch, lastTs: e.lastTs, batches: slices.Clone(e.batches)}
		} else {
			delete(s.producers, pid)
		}
	}
	for _, b := range s.pending {
		if affected[b.pid] {
			applyBatch(s.producers, b)
		}
	}
	return true
}
