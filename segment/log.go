package segment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
)

// File names inside a log directory (see the package doc).
const (
	cleanShutdownFile = ".clean-shutdown"
	logStartFile      = "log-start-offset"
	recoveryPointFile = "recovery-point"
	epochFile         = "leader-epoch-checkpoint"
)

// AppendInfo describes where an appended batch landed.
type AppendInfo struct {
	BaseOffset int64
	LastOffset int64
	Position   int64 // byte position in its segment
}

// Log is a partition directory of segments. All methods are safe for concurrent use.
//
// Lifecycle: Open recovers the directory and starts a background flusher
// (for SyncInterval and SyncNever); Close stops it, waits for a deletion in
// progress (DeleteBefore, DeleteRetained) to remove its files, flushes
// everything, trims the active segment, writes the clean-shutdown marker
// and drops the log's references to every mapping. Views obtained before Close stay valid
// until released; every other method returns ErrClosed afterwards. After an
// I/O error that leaves durability unknown (a failed flush), writes return
// ErrLogFailed; Close then skips the marker so that the next Open recovers.
type Log struct {
	dir    string
	opts   Options
	fs     FS
	logger *slog.Logger

	// deleteMu serialises the changes that move the log start or cut the
	// log (DeleteBefore, DeleteRetained, TruncateTo,
	// TruncateFullyAndStartAt) and Close, and is held across their I/O.
	// Appends never take it: a deletion does its fsyncs, renames and
	// unlinks under deleteMu alone (deletion.go). Take it before appendMu.
	deleteMu sync.Mutex
	// appendMu serializes every mutation (append, roll, truncation, and
	// the in-memory step of a deletion) and is held across the I/O of all
	// but deletions. Readers never take it.
	appendMu      sync.Mutex
	recoveryPoint int64 // (appendMu) value stored in recovery-point
	// epochsStale: the leader-epoch checkpoint on disk lags mu.epochs, because
	// rewriting it after a truncation found the disk full. The next append
	// rewrites it before publishing anything, and Close writes no clean
	// marker while it lags (recovery then rebuilds the cache). (appendMu)
	epochsStale bool

	mu struct {
		sync.RWMutex
		segs     []*segment // by base offset; the last one is active. Invariant: segs[i].next == segs[i+1].base
		logStart int64      // Invariant: segs[0].base <= logStart <= leo
		leo      int64      // Invariant: leo == segs[len-1].next
		epochs   epochCache
		closed   bool
	}

	gc     groupCommit
	failed atomic.Pointer[error]
	point  pointState // the active segment's recovery point (activepoint.go)
	// opened describes what Open did (for its log line and tests): the
	// bytes it scanned batch by batch, the position in the active segment
	// it resumed its scan from (-1: from the start, or trusted), and
	// whether the last shutdown was unclean.
	opened struct {
		scanned, resumedAt int64
		unclean            bool
	}

	pendingMu sync.Mutex
	pending   []*segment // SyncNever: sealed segments not yet fsynced
	// syncing holds the segments a flushPending took from pending and is
	// fsyncing: not durable yet, so they too hold the recovery point back,
	// and a concurrent flushPending (Sync, Close) waits for them.
	syncing []*segment // (pendingMu)
	// synced, when non-nil, is closed (and cleared) whenever segments leave
	// syncing; a flushPending waiting for another's fsync sleeps on it.
	synced chan struct{} // (pendingMu)

	bgStop     chan struct{}
	bgStopOnce sync.Once // closes bgStop: Close may run concurrently
	bgDone     chan struct{}
	bgKick     chan struct{}

	truncateHook func() // tests: called by TruncateTo once the cut is published, before its file I/O
	syncWaitHook func() // tests: called (pendingMu held; must not block) when a flushPending starts waiting for another's fsync
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

func (l *Log) active() *segment { return l.mu.segs[len(l.mu.segs)-1] }

// ioErr classifies a file-system error.
func (l *Log) ioErr(err error) error {
	if err == nil {
		return nil
	}
	if isNoSpace(err) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}

// fail makes the log refuse writes after an I/O error with unknown outcome.
func (l *Log) fail(err error) error {
	e := fmt.Errorf("%w: %w", ErrLogFailed, err)
	if l.failed.CompareAndSwap(nil, &e) {
		l.logger.Error("segment: log failed; reopen to recover", "dir", l.dir, "err", err)
		if l.opts.OnFailure != nil {
			l.opts.OnFailure(l.dir, e)
		}
	}
	return *l.failed.Load()
}

// Failed reports why the log refuses writes after an I/O error with unknown
// outcome (an error wrapping ErrLogFailed), or nil while it is healthy. Its
// log end offset may then count bytes that never became durable.
func (l *Log) Failed() error { return l.failErr() }

func (l *Log) failErr() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// writableLocked checks that the log accepts writes. appendMu held.
func (l *Log) writableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	return l.failErr()
}

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

// Read returns whole batches starting with the batch containing offset, at most
// maxBytes (but always at least one batch if any is there) and never past
// maxOffset (exclusive; use the HW for consumers, -1 for no limit). Batches come
// from one segment; read again from View.Next for more. The View must be
// released.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (*View, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil, ErrClosed
	}
	if offset < l.mu.logStart || offset > l.mu.leo {
		return nil, &OffsetOutOfRangeError{Requested: offset, Start: l.mu.logStart, End: l.mu.leo}
	}
	if offset == l.mu.leo || (maxOffset >= 0 && offset >= maxOffset) {
		return &View{Next: offset}, nil
	}
	segs := l.mu.segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	s := segs[i]
	start, err := l.findBatch(s, offset)
	if err != nil {
		return nil, err
	}
	end, next, want := start, offset, int64(-1)
	for end < s.size {
		size, _, last, _, err := s.batchAt(end, want)
		if err != nil {
			return nil, err
		}
		want = last + 1
		if maxOffset >= 0 && last >= maxOffset {
			break
		}
		if end > start && end-start+size > int64(maxBytes) {
			break
		}
		end += size
		next = last + 1
	}
	if end == start {
		return &View{Next: offset}, nil
	}
	s.mp.acquire()
	return &View{Data: s.mp.data[start:end:end], Next: next, mp: s.mp}, nil
}

// LogStartOffset and LogEndOffset (the offset the next record will get).
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logStart
}

func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.leo
}

// Size returns the bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segs {
		n += s.size
	}
	return n
}

// Segments returns the base offsets of the segments, oldest first.
func (l *Log) Segments() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]int64, len(l.mu.segs))
	for i, s := range l.mu.segs {
		out[i] = s.base
	}
	return out
}

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

// background flushes on the interval (SyncInterval) and makes segments sealed
// under SyncNever durable, advancing the recovery point.
func (l *Log) background(tick <-chan struct{}) {
	defer close(l.bgDone)
	for {
		select {
		case <-l.bgStop:
			return
		case <-tick:
			_ = l.Sync(context.Background())
		case <-l.bgKick:
			if err := l.flushPending(); err != nil {
				continue
			}
			l.appendMu.Lock()
			if l.writableLocked() == nil {
				rp := l.active().base
				l.pendingMu.Lock()
				for _, s := range l.pending {
					rp = min(rp, s.base)
				}
				for _, s := range l.syncing {
					rp = min(rp, s.base)
				}
				l.pendingMu.Unlock()
				if err := l.setRecoveryPointLocked(rp); err != nil {
					l.fail(err)
				}
			}
			l.appendMu.Unlock()
		}
	}
}

// stopBackground stops the background goroutine, if any, and waits for it to
// exit. Safe to call from several goroutines at once.
func (l *Log) stopBackground() {
	if l.bgStop == nil {
		return
	}
	l.bgStopOnce.Do(func() { close(l.bgStop) })
	<-l.bgDone
}

// Close flushes, writes the clean-shutdown marker and unmaps everything once
// no view references remain. Later calls return ErrClosed. Close may be called
// from several goroutines at once: one of them closes the log, the others
// return ErrClosed.
func (l *Log) Close() error {
	l.mu.RLock()
	closed := l.mu.closed
	l.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	l.stopBackground()
	// After a deletion in progress: its files are gone before the marker.
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.mu.closed {
		return ErrClosed
	}
	l.closePoint()
	var err error
	if l.failErr() == nil {
		err = l.flushPending()
		if err == nil {
			err = l.trimLocked(l.active(), true)
		}
		if err == nil && l.epochsStale {
			err = l.saveEpochsLocked(l.mu.epochs.encode())
			if err == nil && l.epochsStale {
				// No clean marker: the next open rebuilds the cache from the
				// segments it scans instead of trusting the stale file.
				err = fmt.Errorf("%w: leader-epoch checkpoint still stale at close; the next open rebuilds it", ErrDiskFull)
			}
		}
		if err == nil {
			err = l.writeCleanMarker()
		}
	}
	l.mu.Lock()
	l.mu.closed = true
	segs := l.mu.segs
	l.mu.Unlock()
	for _, s := range segs {
		s.closeFiles()
	}
	return err
}

func (l *Log) writeCleanMarker() error {
	f, err := l.fs.OpenFile(join(l.dir, cleanShutdownFile), osCreate, 0o644)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return l.fs.SyncDir(l.dir)
}
