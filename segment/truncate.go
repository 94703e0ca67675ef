package segment

import (
	"context"
	"os"
	"slices"
)

// TruncateTo removes every batch at or after the batch that contains offset and
// returns the new log end offset. Views of the removed batches stay valid
// until released. An offset below the log start empties the log and restarts
// it at offset.
//
// Crash safety: the recovery point is lowered first (and the active
// segment's recovery point removed if past the cut), then later segments are
// deleted newest first (each removal made durable before the next), then the
// segment containing offset is truncated; a crash in between leaves a prefix
// of the old log, never a mix or a gap.
func (l *Log) TruncateTo(ctx context.Context, offset int64) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return 0, err
	}
	if offset >= l.mu.leo {
		return l.mu.leo, nil
	}
	if offset < l.mu.logStart {
		if err := l.truncateFullyLocked(offset); err != nil {
			return 0, err
		}
		return offset, nil
	}
	segs := l.mu.segs
	i := len(segs) - 1
	for segs[i].base > offset {
		i--
	}
	s := segs[i]
	pos, err := l.findBatch(s, offset)
	if err != nil {
		return 0, err
	}
	newLEO := s.next
	if pos < s.size {
		if _, newLEO, _, _, err = s.batchAt(pos, -1); err != nil {
			return 0, err
		}
	}
	if err := l.setRecoveryPointLocked(min(l.recoveryPoint, s.base)); err != nil {
		return 0, l.fail(err)
	}
	if err := l.lowerCleanerPoint(newLEO); err != nil {
		return 0, l.fail(err)
	}
	// Held until the cut is published and done (activepoint.go).
	if err := l.dropPointLocked(s.base, pos); err != nil {
		l.point.mu.Unlock()
		return 0, l.fail(err)
	}
	defer l.point.mu.Unlock()

	// Publish the truncated state: readers stop seeing the removed batches.
	k, _ := s.idx.lastBefore(pos)
	l.mu.Lock()
	removed := append([]*segment(nil), segs[i+1:]...)
	l.mu.segs = segs[:i+1]
	s.size, s.next = pos, newLEO
	s.cuts++
	if s.flushed.Load() > pos {
		s.flushed.Store(pos)
	}
	if page := pos &^ int64(pageSize-1); s.uncached.Load() > page {
		s.uncached.Store(page) // the rewritten range is dropped again after its flush
	}
	s.idx.n, s.tidx.n = k, k
	s.maxTs = s.recomputeMaxTs()
	l.mu.leo = newLEO
	lowerStart := newLEO < l.mu.logStart
	if lowerStart {
		// The batch holding offset began below the log start: the log is now empty.
		l.mu.logStart = newLEO
	}
	// Lowered with the log end, under Log.mu: a flush finishing after
	// this must not record the old end as durable, not even for a moment.
	l.gc.lower(newLEO)
	l.mu.epochs.truncateFromEnd(newLEO)
	enc := l.mu.epochs.encode()
	// In place only when nothing but the log's own reference maps the file:
	// no View of this mapping, and no mapping of the file left over from
	// an earlier Log instance or an earlier truncation (segmentMaps).
	inPlace := s.mp == nil || (s.mp.refs.Load() == 1 && liveMappings(s.logPath) == 1)
	wasSealed := s.sealed
	l.mu.Unlock()
	if l.truncateHook != nil {
		l.truncateHook()
	}

	if lowerStart {
		if err := writeOffsetCheckpoint(l.fs, join(l.dir, logStartFile), newLEO); err != nil {
			return 0, l.fail(err)
		}
	}
	slices.Reverse(removed) // newest first
	err = l.removeSegmentsLocked(removed)
	for _, r := range removed {
		r.closeFiles()
	}
	if err != nil {
		return 0, l.fail(err)
	}
	if err := l.reactivateLocked(s, pos, inPlace, wasSealed); err != nil {
		return 0, l.fail(err)
	}
	// The truncation itself is done and needed no room; on a full disk the
	// file keeps entries past the new end until an append or Close rewrites it.
	if err := l.saveEpochsLocked(enc); err != nil {
		return 0, l.fail(err)
	}
	return newLEO, nil
}

// recomputeMaxTs derives the max timestamp of the first s.size bytes from the
// time index and the batches after the last entry. Log.mu held.
func (s *segment) recomputeMaxTs() int64 {
	maxTs := s.tidx.lastTimestamp()
	var pos int64
	if s.idx.n > 0 {
		_, p := s.idx.at(s.idx.n - 1)
		pos = int64(p)
	}
	for pos < s.size {
		size, _, _, ts, err := s.batchAt(pos, -1)
		if err != nil {
			break // damaged below the cut: keep the largest timestamp found
		}
		maxTs = max(maxTs, ts)
		pos += size
	}
	return maxTs
}

// reactivateLocked makes s, already cut to pos in memory, the writable active
// segment on disk: in place when no reader holds its mapping, else by writing
// the kept prefix to a new file renamed over the old one. appendMu held.
func (l *Log) reactivateLocked(s *segment, pos int64, inPlace, wasSealed bool) error {
	capacity := s.capacity
	if wasSealed || capacity < l.opts.SegmentBytes {
		capacity = max(l.opts.SegmentBytes, pos)
	}
	var newFile *fileRef
	if inPlace {
		f := s.file.f
		if err := f.Truncate(pos); err != nil {
			return err
		}
		if err := f.Truncate(capacity); err != nil {
			return l.ioErr(err)
		}
		if err := f.Sync(); err != nil {
			return err
		}
	} else {
		tmp := s.logPath + ".tmp"
		f, err := l.fs.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
		if err != nil {
			return l.ioErr(err)
		}
		err = f.Truncate(capacity)
		if err == nil && pos > 0 {
			_, err = f.WriteAt(s.mp.data[:pos], 0)
		}
		if err == nil {
			err = f.Sync()
		}
		if err == nil {
			err = l.fs.Rename(tmp, s.logPath)
		}
		if err == nil {
			err = l.fs.SyncDir(l.dir)
		}
		if err != nil {
			f.Close()
			_ = l.fs.Remove(tmp)
			return l.ioErr(err)
		}
		newFile = newFileRef(f)
	}
	file := s.file
	if newFile != nil {
		file = newFile
	}
	var mp *mapping
	if wasSealed || newFile != nil || len(s.mp.data) < int(capacity) {
		m, err := file.f.Map(int(capacity), false)
		if err != nil {
			return err
		}
		file.acquire()
		mp = newMapping(m, nil, false)
		mp.onFree = func(error) { file.release() }
		trackMapping(s.logPath, mp)
	}
	var idx offsetIndex
	var tidx timeIndex
	if wasSealed {
		// The sealed indexes are trimmed and read-only: reopen them writable.
		probe := &segment{base: s.base}
		if err := l.openIndexes(probe, true, s.idx.n, s.tidx.n); err != nil {
			if mp != nil {
				mp.release()
			}
			return err
		}
		idx, tidx = probe.idx, probe.tidx
	}
	l.mu.Lock()
	oldMp, oldFile, oldIdx, oldTidx := s.mp, s.file, s.idx, s.tidx
	if mp != nil {
		s.mp = mp
	}
	if newFile != nil {
		s.file = newFile
	}
	if wasSealed {
		s.idx, s.tidx = idx, tidx
	}
	s.sealed = false
	l.mu.Unlock()
	if mp != nil && oldMp != nil {
		oldMp.release()
	}
	if newFile != nil {
		oldFile.release()
	}
	if wasSealed {
		oldIdx.close()
		oldTidx.close()
	}
	s.capacity = capacity
	s.sinceIndex = l.sinceLastIndex(s)
	s.rollTime = l.opts.Now()
	s.pointDue.Store(0) // a new active recovery point after the next flush
	return nil
}

// TruncateFullyAndStartAt deletes everything and restarts the log at offset.
func (l *Log) TruncateFullyAndStartAt(ctx context.Context, offset int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if offset < 0 {
		return &OffsetOutOfRangeError{Requested: offset, Start: 0, End: 0}
	}
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return err
	}
	return l.truncateFullyLocked(offset)
}

// truncateFullyLocked: appendMu held (or called from Open).
func (l *Log) truncateFullyLocked(offset int64) error {
	if err := l.lowerCleanerPoint(offset); err != nil {
		return l.fail(err)
	}
	if err := l.dropPointLocked(-1, 0); err != nil {
		l.point.mu.Unlock()
		return l.fail(err)
	}
	defer l.point.mu.Unlock()
	old := l.mu.segs
	newestFirst := slices.Clone(old)
	slices.Reverse(newestFirst)
	if err := l.removeSegmentsLocked(newestFirst); err != nil {
		return l.fail(err)
	}
	if err := writeOffsetCheckpoint(l.fs, join(l.dir, logStartFile), offset); err != nil {
		return l.fail(err)
	}
	seg, err := l.createSegment(offset, l.opts.SegmentBytes)
	if err != nil {
		return l.fail(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return l.fail(err)
	}
	l.mu.Lock()
	l.mu.segs = []*segment{seg}
	l.mu.logStart, l.mu.leo = offset, offset
	l.mu.epochs = epochCache{}
	l.gc.lower(offset) // with the log end, under Log.mu (see TruncateTo)
	l.gc.set(offset)
	l.mu.Unlock()
	l.pendingMu.Lock()
	l.pending = nil
	l.pendingMu.Unlock()
	for _, s := range old {
		s.closeFiles()
	}
	if err := WriteCheckpoint(l.fs, join(l.dir, epochFile), (&epochCache{}).encode()); err != nil {
		return l.fail(err)
	}
	l.epochsStale = false
	if err := l.setRecoveryPointLocked(offset); err != nil {
		return l.fail(err)
	}
	return nil
}

// removeSegmentsLocked removes the files of segs in order, fsyncing the
// directory after each segment. The file system may persist removals not yet
// covered by a directory fsync in any order, so one fsync after several
// segments could leave a gap in base offsets after a crash, which recovery
// must treat as corruption (Open fails, or truncates the log at the gap).
// One per segment leaves a crash with a prefix of segs removed and at most
// one segment partly removed: a .log without some of its indexes (rebuilt)
// or indexes without their .log (deleted). A removal that fails stops it:
// the caller fails the log before cutting anything else, as a segment file
// left behind would come back at the next Open after the cut one (a gap in
// base offsets). appendMu held.
func (l *Log) removeSegmentsLocked(segs []*segment) error {
	for _, s := range segs {
		if err := l.removeSegmentFilesErr(s.base); err != nil {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}
	return nil
}
