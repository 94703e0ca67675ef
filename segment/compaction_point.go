package segment

import "math"

// The cleaner point (cleaner-offset-checkpoint) is where the last pass
// stopped: records below it were cleaned, those from it on are dirty. A
// truncation below it (only an unclean leader election cuts below the
// HW, and passes stay below the HW) would leave it above records written
// after the cut, which the next pass would then take for clean: it would
// not map their keys, and would remove a tombstone among them without
// removing the records it deletes. So a truncation lowers it first,
// durably, to the new log end (lowerCleanerPoint), Open lowers it to the
// log end it recovers, and a pass that ran while a truncation cut the log
// stops its point at the cut (cleanerCut).

// beginCleanerPass starts tracking truncations for a pass. compactMu held.
func (l *Log) beginCleanerPass() {
	l.cleanerMu.Lock()
	l.cleanerCut = math.MaxInt64
	l.cleanerMu.Unlock()
}

// firstDirty returns where the last pass stopped (0 before any).
// compactMu held.
func (l *Log) firstDirty() int64 {
	l.cleanerMu.Lock()
	defer l.cleanerMu.Unlock()
	return l.cleanerPointLocked()
}

// cleanerPointLocked returns the cleaner point, reading the checkpoint the
// first time (an unreadable one counts as 0: everything is dirty).
// cleanerMu held.
func (l *Log) cleanerPointLocked() int64 {
	if l.cleanerPoint >= 0 {
		return l.cleanerPoint
	}
	off, ok, err := readOffsetCheckpoint(l.fs, join(l.dir, cleanerPointFile))
	if err != nil {
		l.logger.Warn("segment: unreadable cleaner checkpoint; cleaning from the log start", "err", err)
		ok = false
	}
	if !ok {
		off = 0
	}
	l.cleanerPoint = off
	return off
}

// saveCleanerPoint records, durably, that a pass cleaned up to off, or up
// to where a truncation cut the log while it ran. compactMu held.
func (l *Log) saveCleanerPoint(off int64) error {
	l.cleanerMu.Lock()
	defer l.cleanerMu.Unlock()
	return l.storeCleanerPointLocked(min(off, l.cleanerCut))
}

// storeCleanerPointLocked writes off to the checkpoint, durably, and keeps
// it. cleanerMu held.
func (l *Log) storeCleanerPointLocked(off int64) error {
	if err := writeOffsetCheckpoint(l.fs, join(l.dir, cleanerPointFile), off); err != nil {
		return err
	}
	l.cleanerPoint = off
	return nil
}

// lowerCleanerPoint makes the cleaner point at most end, durably, before
// a truncation to end (or when Open recovers a log ending there), and
// stops a running pass's point there.
func (l *Log) lowerCleanerPoint(end int64) error {
	l.cleanerMu.Lock()
	defer l.cleanerMu.Unlock()
	l.cleanerCut = min(l.cleanerCut, end)
	if l.cleanerPointLocked() <= end {
		return nil
	}
	l.logger.Info("segment: cleaner point lowered to the log end", "from", l.cleanerPoint, "to", end)
	return l.storeCleanerPointLocked(end)
}
