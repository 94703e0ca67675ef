package segment

import (
	"context"
)

// WaitDurable returns once every byte below offset is on disk as the sync
// policy requires: SyncAlways flushes (coalescing concurrent callers into one
// flush), the other policies return at once. When ctx ends first it returns
// ctx.Err(), also while a flush it started is still running: that flush
// completes in the background and counts for every later caller.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error {
	if err := l.failErr(); err != nil {
		return err
	}
	if l.opts.Sync != SyncAlways {
		return nil
	}
	return l.gc.waitFor(ctx, offset, l.flushAll, l.LogEndOffset)
}

// Sync flushes everything now regardless of policy.
func (l *Log) Sync(ctx context.Context) error {
	if err := l.failErr(); err != nil {
		return err
	}
	return l.gc.waitFor(ctx, l.LogEndOffset(), l.flushAll, l.LogEndOffset)
}

// flushAll makes every appended byte durable and returns the offset it covers.
func (l *Log) flushAll() (int64, error) {
	timer := l.startFlushTimer()
	if err := l.flushPending(); err != nil {
		return 0, err
	}
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return 0, ErrClosed
	}
	s := l.active()
	end, target, mp, cuts := s.size, l.mu.leo, s.mp, s.cuts
	point := pointCapture{seg: s, cuts: cuts, pos: end, next: s.next, maxTs: s.maxTs, entries: s.idx.n}
	if mp != nil {
		mp.acquire()
	}
	l.mu.RUnlock()
	if mp == nil {
		return target, nil
	}
	defer mp.release()
	from := s.flushed.Load()
	if end > from {
		if err := mp.m.Flush(int(from), int(end-from)); err != nil {
			return 0, l.fail(err)
		}
		timer.done(end - from)
		// A truncation that cut the segment meanwhile lowered flushed to
		// the cut; what was written after it is not covered (Log.mu
		// orders this against TruncateTo's update).
		l.mu.RLock()
		uncut := s.cuts == cuts
		for uncut {
			cur := s.flushed.Load()
			if cur >= end || s.flushed.CompareAndSwap(cur, end) {
				break
			}
		}
		var file *fileRef // for dropCache: s.file changes under Log.mu
		if uncut && l.dropDue(s, end) && s.file.tryAcquire() {
			file = s.file
		}
		pointDue := uncut && l.pointDue(s, end)
		l.mu.RUnlock()
		if file != nil {
			l.dropCache(s, mp, file, end)
			file.release()
		}
		if pointDue {
			l.startPointWrite(point)
		}
	}
	return target, nil
}

// flushPending fsyncs segments sealed without a flush (SyncNever): the .log
// and its .index and .timeindex. A segment leaves pending and syncing only
// once all three are durable: the recovery point then passes it (and Close
// writes the clean marker), after which Open trusts its index without a scan,
// so an index lost to a power cut would leave it unindexed for good.
//
// It returns only once the segments another flushPending was fsyncing when
// it began are durable too (or the log failed): Sync promises every byte,
// and Close writes the clean marker after it, so neither may return while
// the background flusher (or a concurrent Sync) still fsyncs a segment it
// took from pending.
func (l *Log) flushPending() error {
	l.pendingMu.Lock()
	segs := l.pending
	l.pending = nil
	others := append([]*segment(nil), l.syncing...)
	l.syncing = append(l.syncing, segs...)
	l.pendingMu.Unlock()
	if err := l.syncSegments(segs); err != nil {
		return err
	}
	return l.awaitSynced(others)
}

// syncSegments fsyncs segs, which flushPending moved from pending to
// syncing; each leaves syncing once durable; after a failure the rest go
// back to pending.
func (l *Log) syncSegments(segs []*segment) error {
	for i, s := range segs {
		l.mu.RLock()
		files := make([]*fileRef, 0, 3)
		for _, f := range []*fileRef{s.file, s.idx.fileRef(), s.tidx.fileRef()} {
			if f != nil && f.tryAcquire() { // else deleted meanwhile
				files = append(files, f)
			}
		}
		l.mu.RUnlock()
		var err error
		for _, f := range files {
			if err == nil {
				err = f.f.Sync()
			}
			f.release()
		}
		if err != nil {
			// Failed before the segments leave syncing: a flushPending
			// waiting for them then sees the failure.
			err = l.fail(err)
		}
		l.pendingMu.Lock()
		if err != nil {
			for _, r := range segs[i:] {
				l.syncing = removeSegment(l.syncing, r)
			}
			l.pending = append(append([]*segment(nil), segs[i:]...), l.pending...)
		} else {
			l.syncing = removeSegment(l.syncing, s)
		}
		if l.synced != nil {
			close(l.synced)
			l.synced = nil
		}
		l.pendingMu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// awaitSynced waits until none of segs is being fsynced any more, then
// reports whether the log failed meanwhile (a failed fsync puts its segment
// back to pending and fails the log).
func (l *Log) awaitSynced(segs []*segment) error {
	if len(segs) == 0 {
		return nil
	}
	hooked := false
	for {
		l.pendingMu.Lock()
		busy := false
		for _, s := range segs {
			for _, x := range l.syncing {
				if x == s {
					busy = true
				}
			}
		}
		if !busy {
			l.pendingMu.Unlock()
			return l.failErr()
		}
		if l.synced == nil {
			l.synced = make(chan struct{})
		}
		ch := l.synced
		if !hooked && l.syncWaitHook != nil {
			hooked = true
			l.syncWaitHook()
		}
		l.pendingMu.Unlock()
		<-ch
	}
}

// removeSegment removes the first occurrence of s from segs.
func removeSegment(segs []*segment, s *segment) []*segment {
	for i, x := range segs {
		if x == s {
			return append(segs[:i], segs[i+1:]...)
		}
	}
	return segs
}

// setRecoveryPointLocked stores the recovery point. appendMu held.
func (l *Log) setRecoveryPointLocked(off int64) error {
	if off == l.recoveryPoint {
		return nil
	}
	if err := writeOffsetCheckpoint(l.fs, join(l.dir, recoveryPointFile), off); err != nil {
		if off > l.recoveryPoint && isNoSpace(err) {
			// Raising the recovery point only spares recovery a scan:
			// the lower one on disk stays true. Tried again at the next
			// roll.
			l.logger.Warn("segment: disk full; recovery point not advanced", "dir", l.dir, "offset", off, "err", err)
			return nil
		}
		return err
	}
	l.recoveryPoint = off
	return nil
}
