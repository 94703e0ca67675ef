package segment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strings"
	"time"
)

// Open opens or creates the log in dir, recovering after an unclean shutdown
// (see the package doc). It fails with a *CorruptionError when a sealed
// segment is corrupt, unless Options.TruncateOnCorruption is set.
func Open(ctx context.Context, dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l := &Log{dir: dir, opts: opts, fs: opts.FS, logger: opts.Logger.With("dir", dir)}
	l.opened.resumedAt = -1
	l.cleanerPoint, l.cleanerCut = -1, math.MaxInt64
	if err := l.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("segment: open %s: %w", dir, err)
	}
	started := time.Now()
	if err := l.load(); err != nil {
		for _, s := range l.mu.segs {
			s.closeFiles()
		}
		return nil, err
	}
	if l.opened.scrubbed {
		if err := l.fs.Remove(join(l.dir, scrubMarkFile)); err == nil {
			err = l.fs.SyncDir(l.dir)
		}
		if err != nil { // checked again at the next open: harmless
			l.logger.Warn("segment: could not remove the scrub's mark for repair", "err", err)
		}
		if !l.opened.torn {
			l.logger.Warn("segment: the segment a scrub found corrupt checks out now (the damage was in memory, or a read error); kept")
		}
	}
	level := slog.LevelDebug
	if l.opened.unclean && l.mu.leo > l.mu.logStart {
		level = slog.LevelInfo // explains a slow restart
	}
	l.logger.Log(ctx, level, "segment: log opened", "start", l.mu.logStart, "end", l.mu.leo,
		"segments", len(l.mu.segs), "unclean", l.opened.unclean, "scanned_bytes", l.opened.scanned,
		"resumed_at", l.opened.resumedAt, "took", time.Since(started))
	if opts.Sync != SyncAlways {
		l.bgStop, l.bgDone, l.bgKick = make(chan struct{}), make(chan struct{}), make(chan struct{}, 1)
		var tick <-chan struct{}
		if opts.Sync == SyncInterval {
			tick = ticker(opts.SyncInterval, l.bgStop)
		}
		go l.background(tick)
	}
	return l, nil
}

func ticker(d time.Duration, stop <-chan struct{}) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				select {
				case ch <- struct{}{}:
				case <-stop:
					return
				}
			}
		}
	}()
	return ch
}

// load builds the in-memory state from the directory. Called by Open only.
func (l *Log) load() error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("segment: open %s: %w", l.dir, err)
	}
	if found, err := l.finishSwaps(names); err != nil {
		return fmt.Errorf("segment: open %s: %w", l.dir, err)
	} else if found {
		if names, err = l.fs.ReadDir(l.dir); err != nil {
			return fmt.Errorf("segment: open %s: %w", l.dir, err)
		}
	}
	var bases []int64
	clean := false
	have := map[string]bool{}
	for _, name := range names {
		have[name] = true
		switch {
		case strings.HasSuffix(name, ".tmp") || strings.HasSuffix(name, ".deleted"):
			_ = l.fs.Remove(join(l.dir, name))
		case name == cleanShutdownFile:
			clean = true
		default:
			if b, ok := parseSegmentName(name); ok {
				bases = append(bases, b)
			}
		}
	}
	for _, name := range names {
		for _, ext := range []string{".index", ".timeindex"} {
			if s, ok := strings.CutSuffix(name, ext); ok && !have[s+".log"] {
				_ = l.fs.Remove(join(l.dir, name))
			}
		}
	}
	logStartCk, hasLogStart, err := readOffsetCheckpoint(l.fs, join(l.dir, logStartFile))
	if err != nil {
		return err
	}
	rp, hasRP, err := readOffsetCheckpoint(l.fs, join(l.dir, recoveryPointFile))
	if err != nil {
		l.logger.Warn("segment: unreadable recovery point; scanning every segment", "err", err)
		hasRP = false
	}
	point := l.readPoint()
	rebuildEpochs := false
	var epochs epochCache
	// fileEpochs is what the checkpoint says; it is rewritten below whenever
	// the cache recovery ends with differs from it.
	var fileEpochs string
	if data, err := ReadCheckpoint(l.fs, join(l.dir, epochFile)); err == nil {
		if epochs, err = decodeEpochCache(epochFile, data); err != nil {
			l.logger.Warn("segment: unreadable leader-epoch checkpoint; rebuilding it", "err", err)
			rebuildEpochs = true
		}
		fileEpochs = string(epochs.encode())
	} else if os.IsNotExist(err) {
		rebuildEpochs = len(bases) > 0
	} else {
		return err
	}
	l.opened.unclean = !clean
	if clean {
		if err := l.fs.Remove(join(l.dir, cleanShutdownFile)); err != nil {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	}

	if len(bases) == 0 {
		start := l.opts.InitialOffset
		if hasLogStart {
			start = logStartCk
		}
		seg, err := l.createSegment(start, l.opts.SegmentBytes)
		if err != nil {
			return err
		}
		l.mu.segs = []*segment{seg}
		l.mu.logStart, l.mu.leo = start, start
		l.recoveryPoint = rp
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
		if len(epochs.entries) > 0 {
			if err := WriteCheckpoint(l.fs, join(l.dir, epochFile), (&epochCache{}).encode()); err != nil {
				return err
			}
		}
		return l.setRecoveryPointLocked(start)
	}

	// Segments wholly below the log start are left over from DeleteBefore.
	if hasLogStart {
		for len(bases) > 1 && bases[1] <= logStartCk {
			l.removeSegmentFiles(bases[0])
			bases = bases[1:]
		}
	}
	if !hasRP {
		rp = bases[0]
	}
	// A segment a scrub found corrupt (scrub.go): it and every later one
	// are checked as after a crash, and corruption there is truncated.
	scrubBase, scrubbed, err := readOffsetCheckpoint(l.fs, join(l.dir, scrubMarkFile))
	if err != nil {
		return err
	}
	// repair: what a truncation takes out is set aside, and the log is
	// torn (quarantine.go); markOf names the quarantine of a cut at base.
	repair := scrubbed || l.opts.RepairCorruption
	truncateOnCorruption := l.opts.TruncateOnCorruption || repair
	markOf := func(base int64) int64 {
		if scrubbed {
			return scrubBase
		}
		return base
	}
	if scrubbed {
		l.logger.Warn("segment: a scrub found this log's segment corrupt; checking it and the later ones, and truncating at the first bad batch",
			"segment", scrubBase)
		rp, clean, truncateOnCorruption = min(rp, scrubBase), false, true
		l.opened.unclean = true
		l.opened.scrubbed = true
	}
	if rebuildEpochs {
		epochs = epochCache{}
	}
	// Entries at or after the first scanned segment are rebuilt from its
	// batches; one starting exactly at the log start (moved there by
	// DeleteBefore) is kept.
	knownStart := bases[0]
	if hasLogStart {
		knownStart = max(knownStart, logStartCk)
	}
	truncatedEpochs := false
	for i := 0; i < len(bases); i++ {
		base := bases[i]
		last := i == len(bases)-1
		if i > 0 {
			prev := l.mu.segs[i-1]
			if prev.next != base {
				cerr := &CorruptionError{File: prev.logPath, Position: prev.size, Offset: prev.next,
					Err: corruptf("next segment starts at offset %d", base)}
				if !truncateOnCorruption {
					return cerr
				}
				l.opened.torn = l.opened.torn || repair
				l.logger.Error("segment: corruption; truncating", "err", cerr)
				if repair { // nothing a repair takes out is destroyed (quarantine.go)
					if err := l.setAsideForRepair(markOf(base), -1, bases[i:]); err != nil {
						return err
					}
				}
				for _, b := range bases[i:] {
					l.removeSegmentFiles(b)
				}
				bases = bases[:i]
				// Reload the previous segment as the active one.
				l.mu.segs = l.mu.segs[:i-1]
				prev.closeFiles()
				i -= 2
				continue
			}
		}
		// A segment without both index files is scanned (which rebuilds
		// them), whatever vouches for its data: one a compaction swap put
		// in place (finishSwaps above) has none yet, and one whose files
		// were lost would otherwise keep empty indexes (every read in it
		// scanning from its first batch) and batches never read back.
		indexed := have[segmentName(base)+".index"] && have[segmentName(base)+".timeindex"]
		trusted := (clean || (!last && base < rp)) && indexed
		// The active recovery point stands in for the epochs below it
		// only if no earlier segment was scanned.
		var from *activePoint
		if last && !trusted && !truncatedEpochs && !rebuildEpochs && point != nil && point.base == base {
			from = point
		}
		if !trusted && !truncatedEpochs && !rebuildEpochs && from == nil {
			epochs.truncateFromEnd(max(base, knownStart+1))
			truncatedEpochs = true
		}
		s, err := l.loadSegment(base, last, trusted, from, &epochs, rebuildEpochs, knownStart)
		var cerr *CorruptionError
		if errors.As(err, &cerr) && truncateOnCorruption && !last {
			l.logger.Error("segment: corruption; truncating", "err", cerr)
			l.opened.torn = l.opened.torn || repair
			if repair { // nothing a repair takes out is destroyed (quarantine.go)
				if err := l.setAsideForRepair(markOf(base), base, bases[i+1:]); err != nil {
					return err
				}
			}
			for _, b := range bases[i+1:] {
				l.removeSegmentFiles(b)
			}
			bases = bases[:i+1]
			if !truncatedEpochs && !rebuildEpochs {
				epochs.truncateFromEnd(max(base, knownStart+1))
				truncatedEpochs = true
			}
			s, err = l.loadSegment(base, true, false, nil, &epochs, rebuildEpochs, knownStart)
		}
		if err != nil {
			return err
		}
		l.mu.segs = append(l.mu.segs, s)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	act := l.active()
	if act.size > 0 {
		// When its first batch was written is not known: its age for
		// RollAge counts from now (else it would never roll by age).
		act.rollTime = l.opts.Now()
	}
	l.mu.leo = act.next
	l.mu.logStart = l.mu.segs[0].base
	if hasLogStart && logStartCk > l.mu.logStart {
		l.mu.logStart = logStartCk
	}
	l.recoveryPoint = rp
	if hasRP && rp > act.base {
		l.recoveryPoint = -1 // force a rewrite below
	}
	epochs.truncateFromEnd(l.mu.leo + 1)
	epochs.truncateFromStart(l.mu.logStart)
	l.mu.epochs = epochs
	// The scan may have dropped entries the file holds (an epoch recorded
	// for a batch the crash lost); a later clean open trusts the file.
	// A full disk must not keep the log from opening (saveEpochsLocked).
	if rebuildEpochs || string(epochs.encode()) != fileEpochs {
		if err := l.saveEpochsLocked(epochs.encode()); err != nil {
			return err
		}
	}
	if l.mu.logStart > l.mu.leo {
		l.logger.Warn("segment: log start offset beyond recovered log end; restarting the log",
			"offset", l.mu.logStart, "end", l.mu.leo)
		if err := l.truncateFullyLocked(l.mu.logStart); err != nil {
			return err
		}
	}
	if err := l.setRecoveryPointLocked(l.active().base); err != nil {
		return err
	}
	// Recovery may have cut the log (a torn or corrupt tail).
	if err := l.lowerCleanerPoint(l.mu.leo); err != nil {
		return err
	}
	if err := l.keepPoint(point); err != nil {
		return err
	}
	l.gc.set(l.mu.leo)
	return nil
}

func (l *Log) removeSegmentFiles(base int64) {
	if err := l.removeSegmentFilesErr(base); err != nil {
		l.logger.Warn("segment: remove failed", "err", err)
	}
}

// removeSegmentFilesErr removes a segment's files (those that exist) and
// returns the first failure, after trying all three.
func (l *Log) removeSegmentFilesErr(base int64) error {
	a, b, c := l.segPaths(base)
	var first error
	for _, p := range []string{a, b, c} {
		if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) && first == nil {
			first = err
		}
	}
	return first
}

// loadSegment opens one segment. A trusted segment's files are checked
// cheaply (index sanity and the tail after the last index entry) and scanned
// fully only if that fails; an untrusted one is scanned batch by batch. The
// last segment becomes the writable active segment: its invalid tail is
// removed. In an earlier segment an invalid batch is a *CorruptionError.
func (l *Log) loadSegment(base int64, last, trusted bool, from *activePoint, epochs *epochCache, rebuildEpochs bool, logStart int64) (*segment, error) {
	logPath, _, _ := l.segPaths(base)
	f, err := l.fs.OpenFile(logPath, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	s := &segment{base: base, logPath: logPath, file: newFileRef(f), next: base, maxTs: -1}
	fail := func(err error) (*segment, error) {
		s.closeFiles()
		return nil, err
	}
	size, err := f.Size()
	if err != nil {
		return fail(err)
	}
	capacity := size
	if last {
		capacity = max(l.opts.SegmentBytes, size)
		if size < capacity {
			if err := f.Truncate(capacity); err != nil {
				return fail(l.ioErr(err))
			}
		}
	}
	if capacity > 0 {
		m, err := f.Map(int(capacity), false)
		if err != nil {
			return fail(err)
		}
		s.setMapping(m)
	}
	var data []byte
	if s.mp != nil {
		data = s.mp.data[:size]
	}
	s.capacity, s.sealed = capacity, !last
	// Never touch the mapping past the data (see dataEnder): the bytes
	// there are zeros.
	scanned := data[:dataEnd(f, int64(len(data)))]

	if trusted {
		if err := l.openIndexes(s, last, -1, -1); err == nil {
			if err := l.checkTrusted(s, scanned, size); err == nil {
				if rebuildEpochs {
					walkHeaders(scanned, func(b Batch) {
						if b.LastOffset() >= logStart {
							epochs.assign(b.LeaderEpoch(), b.BaseOffset())
						}
					})
				}
				s.flushed.Store(size)
				s.sinceIndex = l.sinceLastIndex(s)
				return s, nil
			} else {
				l.logger.Warn("segment: index check failed; rescanning segment", "file", logPath, "err", err)
			}
		}
		if s.idx.indexFile != nil {
			s.idx.close()
			s.tidx.close()
			s.idx, s.tidx = offsetIndex{}, timeIndex{}
		}
	}

	var res scanResult
	resumed := false
	if from != nil {
		if res, resumed = l.resumeScan(s, scanned, *from, epochs, logStart); !resumed {
			epochs.truncateFromEnd(max(base, logStart+1))
		}
	}
	if resumed {
		l.opened.resumedAt = from.pos
		l.opened.scanned += res.end - from.pos
	} else {
		res = scanBatches(scanned, base, 0, base, 0, -1, l.opts.IndexInterval, epochs, logStart)
		l.opened.scanned += res.end
	}
	if res.end < size && !last {
		if firstDataPast(f, data, res.end, size, int64(len(scanned))) >= 0 {
			return fail(&CorruptionError{File: logPath, Position: res.end, Offset: res.next, Err: res.err})
		}
		// Zeros after the last whole batch: a seal (under SyncNever, without
		// an fsync) whose truncation from the preallocated size was lost.
		// Whether batches are missing is decided by load's check that the
		// next segment starts where this one ends; trim the zeros.
		l.logger.Info("segment: trimmed zeros after the last batch of a sealed segment", "file", logPath,
			"position", res.end, "offset", res.next)
		if err := f.Truncate(res.end); err != nil {
			return fail(err)
		}
		// The mapping stays longer than the file, as after a seal: every
		// access is below s.size.
		size, s.capacity = res.end, res.end
	}
	if res.end < size && last {
		if !allZero(scanned[res.end:min(int64(len(scanned)), res.end+HeaderSize)]) {
			l.logger.Info("segment: truncated torn tail", "file", logPath, "position", res.end,
				"offset", res.next, "reason", res.err)
			l.opened.torn = true
		} else if at := firstDataPast(f, data, res.end, size, int64(len(scanned))); at >= 0 {
			// Zeros, then data: a gap (gap.go), not the end of the writes.
			l.logger.Warn("segment: truncated the active segment at a gap of zeros; the data after it is dropped",
				"file", logPath, "position", res.end, "offset", res.next, "data_at", at)
			l.opened.torn = true
		}
	}
	s.size, s.next, s.maxTs = res.end, res.next, res.maxTs
	// Rebuild the indexes (after the entries a resumed scan kept).
	if !resumed {
		if err := l.openIndexes(s, true, 0, 0); err != nil {
			return fail(err)
		}
	}
	for i := range res.idxRel {
		if err := s.idx.add(res.idxRel[i], res.idxPos[i]); err != nil {
			return fail(l.ioErr(err))
		}
		s.idx.publish()
		if err := s.tidx.add(res.tidxTs[i], res.idxRel[i]); err != nil {
			return fail(l.ioErr(err))
		}
		s.tidx.publish()
	}
	s.sinceIndex = res.sinceIndex
	if !last {
		for _, ix := range []*indexFile{s.idx.indexFile, s.tidx.indexFile} {
			m, err := ix.persist(true)
			if err != nil {
				return fail(err)
			}
			ix.adopt(m)
		}
		// Open moves the recovery point past this segment: what the scan
		// read (after a process kill, possibly only from the page cache)
		// must be on disk first.
		if err := f.Sync(); err != nil {
			return fail(err)
		}
		s.flushed.Store(size)
		return s, nil
	}
	// The active segment: zero everything after the valid prefix so that
	// stale batches can never reappear, and make the result durable.
	if res.end < size {
		if err := f.Truncate(res.end); err != nil {
			return fail(err)
		}
		if err := f.Truncate(capacity); err != nil {
			return fail(l.ioErr(err))
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	s.flushed.Store(res.end)
	if resumed {
		s.pointDue.Store(from.pos + l.opts.ActivePointBytes)
		l.point.seg, l.point.written = s, from.entries
	}
	return s, nil
}

// checkTrusted validates a trusted segment cheaply and fills size, next, maxTs.
func (l *Log) checkTrusted(s *segment, data []byte, size int64) error {
	if err := s.idx.check(size); err != nil {
		return err
	}
	if err := s.tidx.check(); err != nil {
		return err
	}
	if s.tidx.n != s.idx.n {
		return fmt.Errorf("index has %d entries, time index %d", s.idx.n, s.tidx.n)
	}
	// Entries are written in pairs for the same batch.
	for i := 0; i < s.idx.n; i++ {
		if rel, _ := s.idx.at(i); rel != s.tidx.rel(i) {
			return fmt.Errorf("index entry %d is for relative offset %d, time index entry for %d", i, rel, s.tidx.rel(i))
		}
	}
	var pos int64
	next := s.base
	if s.idx.n > 0 {
		rel, p := s.idx.at(s.idx.n - 1)
		pos, next = int64(p), s.base+int64(rel)
	}
	gap, full := l.indexGap(s), s.idx.n >= l.opts.MaxIndexBytes/offsetEntrySize
	var since int64 // bytes after the last entry
	maxTs := s.tidx.lastTimestamp()
	for pos < size {
		if pos >= int64(len(data)) {
			return fmt.Errorf("data ends at byte %d (a hole follows), file size %d", len(data), size)
		}
		b, err := nextBatch(data, int(pos))
		if err != nil {
			return err
		}
		if b.BaseOffset() != next {
			return corruptf("batch at byte %d has offset %d, expected %d", pos, b.BaseOffset(), next)
		}
		if pos > 0 && since >= gap && !full {
			return fmt.Errorf("index ends %d bytes before the batch at byte %d, and its entries are %d or more bytes apart: entries are missing from its end (or the interval was raised while it was active)", since, pos, gap)
		}
		since += int64(len(b))
		next = b.LastOffset() + 1
		maxTs = max(maxTs, b.MaxTimestamp())
		pos += int64(len(b))
	}
	s.size, s.next, s.maxTs = size, next, maxTs
	return nil
}

// indexGap returns the interval a trusted segment's index was written at, as
// far as its entries tell: the smallest distance between two of them (the
// first's from the segment's start). An entry is added once IndexInterval
// bytes followed the one before, so each distance is at least the interval
// in force when it was written; a tail after the last entry that reaches the
// smallest of them held an entry the file lost. The interval is read from the
// entries rather than the options so that a lowered --index-interval does
// not rescan every segment; a raised one rescans at most the segment that
// was active when it changed (its tail came at the new interval), once. An
// index without entries falls back to the options.
func (l *Log) indexGap(s *segment) int64 {
	gap := int64(max(l.opts.IndexInterval, 1))
	var prev int64
	for i := 0; i < s.idx.n; i++ {
		_, p := s.idx.at(i)
		if i == 0 || int64(p)-prev < gap {
			gap = int64(p) - prev
		}
		prev = int64(p)
	}
	return gap
}

// sinceLastIndex returns the bytes after the last index entry.
func (l *Log) sinceLastIndex(s *segment) int64 {
	if s.idx.n == 0 {
		return s.size
	}
	_, p := s.idx.at(s.idx.n - 1)
	return s.size - int64(p)
}

func allZero(b []byte) bool { return firstNonZero(b) < 0 }

// walkHeaders calls fn for each batch of data, trusting lengths (data is
// from a checked, trusted segment).
func walkHeaders(data []byte, fn func(Batch)) {
	for pos := 0; pos < len(data); {
		b, err := nextBatch(data, pos)
		if err != nil {
			return
		}
		fn(b)
		pos += len(b)
	}
}

// scanResult is what scanBatches found.
type scanResult struct {
	end        int64 // end of the valid prefix
	next       int64 // offset after the last valid batch
	maxTs      int64
	err        error // why the scan stopped before the end of data; nil if it did not
	idxRel     []uint32
	idxPos     []uint32
	tidxTs     []int64
	sinceIndex int64
}

// scanBatches validates data (a segment with base offset base) batch by
// batch from byte pos, where offset next starts (length, header, CRC,
// offset continuity), collecting index entries every interval bytes
// (sinceIndex bytes after the previous entry at pos; maxTs the largest
// timestamp before pos) and assigning leader epochs of batches reaching
// logStart. It stops at the first invalid batch.
func scanBatches(data []byte, base int64, pos int, next, sinceIndex, maxTs int64, interval int, epochs *epochCache, logStart int64) scanResult {
	r := scanResult{next: next, maxTs: maxTs, sinceIndex: sinceIndex}
	for pos < len(data) {
		b, err := nextBatch(data, pos)
		if err == nil {
			err = b.Validate()
		}
		if err == nil && b.BaseOffset() != r.next {
			err = corruptf("batch has offset %d, expected %d", b.BaseOffset(), r.next)
		}
		if err != nil {
			r.err = err
			break
		}
		if pos > 0 && r.sinceIndex >= int64(interval) {
			r.idxRel = append(r.idxRel, uint32(r.next-base))
			r.idxPos = append(r.idxPos, uint32(pos))
			r.tidxTs = append(r.tidxTs, r.maxTs)
			r.sinceIndex = 0
		}
		r.sinceIndex += int64(len(b))
		if epochs != nil && b.LastOffset() >= logStart {
			epochs.assign(b.LeaderEpoch(), r.next)
		}
		r.maxTs = max(r.maxTs, b.MaxTimestamp())
		r.next = b.LastOffset() + 1
		pos += len(b)
	}
	r.end = int64(pos)
	return r
}
