package segment

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// checkShape parses b's header and checks that it spans exactly b and at
// most max bytes.
func checkShape(b Batch, max int) (Header, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return h, err
	}
	if size := lengthPrefix + int(h.Length); size != len(b) {
		return h, corruptf("batch length field says %d bytes, have %d", size, len(b))
	}
	if len(b) > max {
		return h, fmt.Errorf("%w: %d bytes, limit %d", ErrRecordTooLarge, len(b), max)
	}
	return h, nil
}

// Append assigns offsets starting at the log end, stamps leaderEpoch into the
// batch (it is modified in place) and copies it into the active segment. It does
// not wait for durability; call WaitDurable before acknowledging. Append does
// not verify the CRC (the caller validated the batch when it arrived); it does
// check the header structure.
func (l *Log) Append(ctx context.Context, b Batch, leaderEpoch int32) (AppendInfo, error) {
	if err := ctx.Err(); err != nil {
		return AppendInfo{}, err
	}
	h, err := checkShape(b, l.opts.MaxBatchBytes)
	if err != nil {
		return AppendInfo{}, err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	base := l.mu.leo
	last, err := lastOffset(base, h.LastOffsetDelta)
	if err != nil {
		return AppendInfo{}, err
	}
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(leaderEpoch)
	info, err := l.appendOneLocked(b, base, last, leaderEpoch, h.MaxTimestamp)
	return info, l.noteDiskFull(err)
}

// noteDiskFull reports err to Options.OnDiskFull if it is ErrDiskFull, and
// returns it.
func (l *Log) noteDiskFull(err error) error {
	if err != nil && l.opts.OnDiskFull != nil && errors.Is(err, ErrDiskFull) {
		l.opts.OnDiskFull(l.dir, err)
	}
	return err
}

// lastOffset returns base+delta for a batch (delta >= 0, checked by
// ParseHeader), or ErrOffsetOverflow if it or the log end after it
// (last+1) would overflow an int64.
func lastOffset(base int64, delta int32) (int64, error) {
	if base > math.MaxInt64-1-int64(delta) {
		return 0, fmt.Errorf("%w: batch at offset %d with last offset delta %d", ErrOffsetOverflow, base, delta)
	}
	return base + int64(delta), nil
}

// appendOneLocked copies one stamped batch to the log end. appendMu held.
func (l *Log) appendOneLocked(b Batch, base, last int64, epoch int32, maxTs int64) (AppendInfo, error) {
	n := int64(len(b))
	seg, err := l.segmentForLocked(n, last)
	if err != nil {
		return AppendInfo{}, err
	}
	pos := seg.size
	// One copy into the page cache pages that the segment's shared mapping
	// shows to readers. A write system call instead of a store through the
	// mapping: stores into fresh pages of a sparse file take one page fault
	// (and, on ext4, one journal handle) per 4 KiB, which measured several
	// times slower, and a full disk is an ENOSPC error here instead of SIGBUS.
	if written, err := seg.file.f.WriteAt(b, pos); err != nil {
		// A write can fail part-way: what reached the file is zeroed so
		// that recovery, which scans the active segment past its end,
		// never finds it, alone or completing the remnant of an earlier
		// refused batch at the same position.
		if !isNoSpace(err) {
			_ = l.unwriteLocked(seg, pos, int64(written), false) // best effort: the log fails
			return AppendInfo{}, l.fail(err)
		}
		if err := l.unwriteLocked(seg, pos, int64(written), true); err != nil {
			return AppendInfo{}, err
		}
		return AppendInfo{}, fmt.Errorf("%w: appending %d bytes to %s: %w", ErrDiskFull, n, seg.logPath, err)
	}
	// A batch that opens a leader epoch is recorded in the epoch checkpoint
	// before it is published. On a full disk that write fails like the
	// append itself would: the batch is refused and the log stays healthy
	// (a node whose disk filled up would otherwise stop at every leadership
	// change). Writers hold appendMu, so the cache is stable here.
	var next *epochCache
	if opens := l.mu.epochs.opens(epoch); opens || l.epochsStale {
		next = &epochCache{entries: l.mu.epochs.clone()}
		if opens {
			next.assign(epoch, base)
		}
		if err := WriteCheckpoint(l.fs, join(l.dir, epochFile), next.encode()); err != nil {
			if !isNoSpace(err) {
				_ = l.unwriteLocked(seg, pos, n, false) // best effort: the log fails
				return AppendInfo{}, l.fail(err)
			}
			if err := l.unwriteLocked(seg, pos, n, true); err != nil {
				return AppendInfo{}, err
			}
			return AppendInfo{}, fmt.Errorf("%w: recording leader epoch %d at offset %d: %w", ErrDiskFull, epoch, base, err)
		}
		l.epochsStale = false
	}
	indexed, err := l.indexBatchLocked(seg, pos, base, n)
	if err != nil {
		if uerr := l.unwriteLocked(seg, pos, n, true); uerr != nil {
			return AppendInfo{}, uerr
		}
		return AppendInfo{}, l.ioErr(err)
	}

	l.mu.Lock()
	seg.size = pos + n
	seg.next = last + 1
	if maxTs > seg.maxTs {
		seg.maxTs = maxTs
	}
	if indexed {
		seg.idx.publish()
		seg.tidx.publish()
	}
	l.mu.leo = last + 1
	if next != nil {
		l.mu.epochs = *next
	}
	l.mu.Unlock()
	return AppendInfo{BaseOffset: base, LastOffset: last, Position: pos}, nil
}

// saveEpochsLocked stores enc (an encoded epoch cache) in the leader-epoch
// checkpoint. A full disk is not an error here: the file is left stale
// (epochsStale, logged once) for the next append or Close to rewrite.
// appendMu held (or the log not yet open).
func (l *Log) saveEpochsLocked(enc []byte) error {
	err := WriteCheckpoint(l.fs, join(l.dir, epochFile), enc)
	switch {
	case err == nil:
		l.epochsStale = false
	case isNoSpace(err):
		if !l.epochsStale {
			l.logger.Warn("segment: disk full; leader-epoch checkpoint rewritten at the next append", "dir", l.dir, "err", err)
		}
		l.epochsStale = true
		return nil
	}
	return err
}

// unwriteLocked zeroes the n bytes of a batch written at pos but not
// published. Recovery scans the active segment past its last flush, batch by
// batch, and checks offset continuity, which such a batch has (it was stamped
// with the log end): left in place, a whole refused batch, or a retry's
// partial write completing the remnant of an earlier one, would come back as
// a batch after a restart. All n bytes are zeroed, not just the length
// prefix, so that no remnant is left for a later partial write to complete.
// The bytes are already allocated, so this needs no room. With keep set
// the log is to stay healthy: the zeros are flushed (a writeback of the
// batch may already have reached the disk), and an error fails the log.
// Without it the log is failing anyway and the zeroing is best effort.
// appendMu held.
func (l *Log) unwriteLocked(seg *segment, pos, n int64, keep bool) error {
	if n <= 0 {
		return nil
	}
	_, err := seg.file.f.WriteAt(make([]byte, n), pos)
	if err == nil && keep && seg.mp != nil {
		err = seg.mp.m.Flush(int(pos), int(n))
	}
	if err != nil && keep {
		return l.fail(err)
	}
	return nil
}

// indexBatchLocked writes index entries for a batch at pos (unpublished).
func (l *Log) indexBatchLocked(s *segment, pos, base, n int64) (bool, error) {
	added := false
	if s.size > 0 && s.sinceIndex >= int64(l.opts.IndexInterval) && !s.idx.full() && !s.tidx.full() {
		rel := uint32(base - s.base)
		if err := s.idx.add(rel, uint32(pos)); err != nil {
			return false, err
		}
		if err := s.tidx.add(s.maxTs, rel); err != nil {
			return false, err
		}
		s.sinceIndex = 0
		added = true
	}
	s.sinceIndex += n
	return added, nil
}

// AppendVerbatim stores batches that already carry offsets and epochs (a follower
// copying its leader). The first base offset must equal LogEndOffset and each
// batch must follow the previous one. Every batch's CRC is checked first; on
// a later error a prefix of the batches may have been appended (LogEndOffset
// tells how far).
func (l *Log) AppendVerbatim(ctx context.Context, batches []byte) (AppendInfo, error) {
	if err := ctx.Err(); err != nil {
		return AppendInfo{}, err
	}
	if len(batches) == 0 {
		return AppendInfo{}, errors.New("segment: AppendVerbatim with no batches")
	}
	type item struct {
		b Batch
		h Header
	}
	var items []item
	var next int64 = -1
	_, err := SplitBatches(batches, func(b Batch) error {
		h, err := checkShape(b, l.opts.MaxBatchBytes)
		if err != nil {
			return err
		}
		if next >= 0 && h.BaseOffset != next {
			return fmt.Errorf("%w: batch at offset %d follows one ending before %d", ErrNonContiguous, h.BaseOffset, next)
		}
		last, err := lastOffset(h.BaseOffset, h.LastOffsetDelta)
		if err != nil {
			return err
		}
		next = last + 1
		items = append(items, item{b, h})
		return nil
	})
	if err != nil {
		return AppendInfo{}, err
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if err := l.writableLocked(); err != nil {
		return AppendInfo{}, err
	}
	if first := items[0].h.BaseOffset; first != l.mu.leo {
		return AppendInfo{}, fmt.Errorf("%w: first batch at offset %d, log end is %d", ErrNonContiguous, first, l.mu.leo)
	}
	var info AppendInfo
	for i, it := range items {
		ai, err := l.appendOneLocked(it.b, it.h.BaseOffset, it.h.LastOffset(), it.h.LeaderEpoch, it.h.MaxTimestamp)
		if err != nil {
			return info, l.noteDiskFull(err)
		}
		if i == 0 {
			info = ai
		}
		info.LastOffset = ai.LastOffset
	}
	return info, nil
}
