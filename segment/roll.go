package segment

import (
	"math"
	"time"
)

// SetRollAge changes Options.RollAge (0: DefaultRollAge; negative: never)
// for the appends from now on: the active segment is sealed at the first
// append after it has been open that long.
func (l *Log) SetRollAge(d time.Duration) {
	if d == 0 {
		d = DefaultRollAge
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.opts.RollAge = d
}

// RollIfDue seals the active segment when it holds a batch and has been
// open for the roll age (Options.RollAge, SetRollAge), as the next append
// would, so that the last records of a log no longer written reach the
// sealed segments, which compaction cleans, without one. It reports
// whether it rolled.
func (l *Log) RollIfDue() (bool, error) {
	return l.rollActiveIf(func(s *segment) bool {
		return l.opts.RollAge > 0 && !s.rollTime.IsZero() && l.opts.Now().Sub(s.rollTime) >= l.opts.RollAge
	})
}

// rollActiveIf seals the active segment, without an append, when it
// holds a batch and due says so (appendMu held while it asks), and
// reports whether it did.
func (l *Log) rollActiveIf(due func(s *segment) bool) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return false, err
	}
	if s := l.active(); s.size == 0 || s.sealed || !due(s) {
		return false, nil
	}
	if err := l.rollLocked(0); err != nil {
		return false, err
	}
	return true, nil
}

// segmentForLocked returns the segment the next batch of n bytes ending at
// offset last goes to, rolling if needed. appendMu held.
func (l *Log) segmentForLocked(n, last int64) (*segment, error) {
	seg := l.active()
	need := seg.sealed ||
		seg.size+n > seg.capacity ||
		seg.idx.full() || seg.tidx.full() ||
		last-seg.base > math.MaxUint32
	if !need && seg.size > 0 && l.opts.RollAge > 0 && !seg.rollTime.IsZero() &&
		l.opts.Now().Sub(seg.rollTime) >= l.opts.RollAge {
		need = true
	}
	if !need {
		if seg.size == 0 {
			seg.rollTime = l.opts.Now()
		}
		return seg, nil
	}
	if seg.size == 0 && !seg.sealed {
		// An empty active segment too small for this batch: replace it.
		if err := l.replaceEmptyActiveLocked(n); err != nil {
			return nil, err
		}
	} else if err := l.rollLocked(n); err != nil {
		return nil, err
	}
	seg = l.active()
	seg.rollTime = l.opts.Now()
	return seg, nil
}

func (l *Log) capacityFor(n int64) int64 {
	if n > l.opts.SegmentBytes {
		return n
	}
	return l.opts.SegmentBytes
}

// rollLocked seals the active segment and starts a new one. appendMu held.
func (l *Log) rollLocked(n int64) error {
	old := l.active()
	if !old.sealed {
		if err := l.sealLocked(old, l.opts.Sync != SyncNever); err != nil {
			if isNoSpace(err) {
				// Writing the sealed index found the disk full: nothing
				// changed in memory, the segment stays active, and the
				// next append tries the roll again.
				return l.ioErr(err)
			}
			return l.fail(err)
		}
	}
	seg, err := l.createSegment(old.next, l.capacityFor(n))
	if err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		seg.closeFiles()
		return l.fail(err)
	}
	l.mu.Lock()
	l.mu.segs = append(l.mu.segs, seg)
	l.mu.Unlock()
	if l.opts.Sync == SyncNever {
		l.pendingMu.Lock()
		l.pending = append(l.pending, old)
		l.pendingMu.Unlock()
		select {
		case l.bgKick <- struct{}{}:
		default:
		}
		return nil
	}
	if err := l.setRecoveryPointLocked(seg.base); err != nil {
		return l.fail(err)
	}
	return nil
}

func (l *Log) replaceEmptyActiveLocked(n int64) error {
	old := l.active()
	base := old.base
	if err := l.dropPointLocked(base, 0); err != nil {
		l.point.mu.Unlock()
		return l.fail(err)
	}
	defer l.point.mu.Unlock()
	l.mu.Lock()
	l.mu.segs = l.mu.segs[:len(l.mu.segs)-1]
	l.mu.Unlock()
	old.closeFiles()
	seg, err := l.createSegment(base, l.capacityFor(n))
	if err == nil {
		err = l.fs.SyncDir(l.dir)
	}
	if err != nil {
		if seg != nil {
			// Created but its directory entry is not durable: drop it
			// (file and mapping) before creating the replacement.
			seg.closeFiles()
		}
		// Put back an empty segment so the log keeps its shape.
		if seg2, err2 := l.createSegment(base, l.opts.SegmentBytes); err2 == nil {
			seg = seg2
		} else {
			return l.fail(err)
		}
	}
	l.mu.Lock()
	l.mu.segs = append(l.mu.segs, seg)
	l.mu.Unlock()
	return err
}

// sealLocked flushes (when sync) and trims a segment and marks it sealed.
// Its read-only mapping stays; readers never touch bytes past its size.
// appendMu held.
func (l *Log) sealLocked(s *segment, sync bool) error {
	if err := l.trimLocked(s, sync); err != nil {
		return err
	}
	l.mu.Lock()
	s.sealed = true
	l.mu.Unlock()
	return nil
}

// trimLocked flushes (when sync) and truncates the segment's files to their
// contents. appendMu held.
func (l *Log) trimLocked(s *segment, sync bool) error {
	if sync && s.mp != nil && s.size > s.flushed.Load() {
		from := s.flushed.Load()
		if err := s.mp.m.Flush(int(from), int(s.size-from)); err != nil {
			return &flushError{err}
		}
		s.flushed.Store(s.size)
	}
	m1, err := s.idx.persist(sync)
	if err != nil {
		return err
	}
	m2, err := s.tidx.persist(sync)
	if err != nil {
		if m1 != nil {
			m1.Unmap()
		}
		return err
	}
	l.mu.Lock()
	s.idx.adopt(m1)
	s.tidx.adopt(m2)
	l.mu.Unlock()
	if err := s.file.f.Truncate(s.size); err != nil {
		return err
	}
	s.capacity = s.size
	if sync {
		if err := s.file.f.Sync(); err != nil {
			return &flushError{err}
		}
	}
	return nil
}
