package segment

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// The active segment's recovery point.
//
// The recovery point (recovery-point) covers whole segments: after an
// unclean shutdown Open scans the active segment from its first byte,
// checking every batch's CRC and rebuilding its index in memory. With
// segments of 256 MiB and the page cache dropped behind the newest bytes
// (pagecache.go) that scan reads up to 256 MiB per partition from disk
// before a restarted broker can rejoin: measured, 250–370 ms per partition
// of 120 MB.
//
// So every Options.ActivePointBytes of durable bytes, a background
// goroutine started by the flush records how far the active segment is
// known good: it writes the index entries of the batches below that
// position to the segment's .index and .timeindex (only the entries not yet
// written), fsyncs both, then replaces the active-recovery-point checkpoint
// (WriteCheckpoint: fsynced, renamed, directory fsynced). Open after an
// unclean shutdown then loads those index entries, checks them and the
// anchor batch, and scans only from that position on. Anything that does
// not match (another segment, entries missing or out of order, an anchor
// batch with another CRC, leader epoch or end) makes it scan the whole segment, as
// before: the point only ever saves work. A torn tail that reaches below
// the point destroys its anchor batch, so it is found as before. Other
// damage below the point is not looked for at Open, as for sealed segments
// below the recovery point (Kafka's trust model): a follower copying those
// batches (AppendVerbatim) and a consumer reading them check every CRC.
//
// Format (checkpoint version 0, one line of decimal fields after it):
//
//	0
//	<base> <position> <next offset> <max timestamp> <index entries> <anchor position> <anchor crc> <anchor leader epoch>
//
// base is the active segment's base offset; every byte below position is
// durable and ends with a whole batch; next offset is the offset after that
// batch and max timestamp the largest batch MaxTimestamp below position (-1
// if none); the first <index entries> entries of both index files are
// durable and describe batches below position; the anchor is the last batch
// below position: where it starts, its CRC field and its leader epoch (which
// the CRC does not cover: a producer's retry copied from a new leader is the
// same batch under another epoch).
//
// Truncations keep the point true: one that cuts the active segment below
// the point, or removes or replaces its segment, removes the file (and
// fsyncs the directory) before it cuts anything, holding pointMu, which
// the writer holds for the whole write, until the cut is published; the
// writer, under pointMu, skips a segment that was cut, sealed or replaced
// since its flush. A point left for a sealed segment is ignored (Open
// trusts or scans sealed segments by the recovery point), as is one for a
// segment that a truncation made active again below it (removed first).
// The leader-epoch checkpoint already covers every batch below the point:
// a batch opening an epoch is recorded there before it is published, so
// before any flush covers it.
const activePointFile = "active-recovery-point"

// activePoint is the content of activePointFile.
type activePoint struct {
	base, pos, next, maxTs int64
	entries                int
	anchorPos              int64
	anchorCRC              uint32
	anchorEpoch            int32
}

func (p activePoint) encode() []byte {
	return fmt.Appendf(nil, "%d\n%d %d %d %d %d %d %d %d\n", checkpointVersion,
		p.base, p.pos, p.next, p.maxTs, p.entries, p.anchorPos, p.anchorCRC, p.anchorEpoch)
}

func decodeActivePoint(path string, data []byte) (activePoint, error) {
	lines, err := checkpointLines(path, data)
	if err != nil {
		return activePoint{}, err
	}
	if len(lines) != 1 {
		return activePoint{}, corruptf("checkpoint %s: want 1 line, have %d", path, len(lines))
	}
	f := strings.Fields(string(lines[0]))
	if len(f) != 8 {
		return activePoint{}, corruptf("checkpoint %s: want 8 fields, have %d", path, len(f))
	}
	var v [8]int64
	for i, s := range f {
		if v[i], err = strconv.ParseInt(s, 10, 64); err != nil {
			return activePoint{}, corruptf("checkpoint %s: field %d: %q", path, i+1, s)
		}
	}
	p := activePoint{base: v[0], pos: v[1], next: v[2], maxTs: v[3], entries: int(v[4]), anchorPos: v[5], anchorCRC: uint32(v[6]), anchorEpoch: int32(v[7])}
	switch {
	case p.base < 0 || p.pos <= 0 || p.pos > MaxSegmentBytes || p.next <= p.base,
		p.entries < 0 || int64(p.entries) > p.pos, p.anchorPos < 0 || p.anchorPos >= p.pos,
		v[6] < 0 || v[6] > 1<<32-1, v[7] < -1<<31 || v[7] > 1<<31-1:
		return activePoint{}, corruptf("checkpoint %s: inconsistent fields %q", path, lines[0])
	}
	return p, nil
}

// pointState is the writer's side of the active recovery point: a Log
// field.
type pointState struct {
	// mu is held by the writer for its whole write, and by whatever cuts,
	// removes or replaces the active segment from before it removes the
	// file until the cut is published. Lock order: appendMu, then mu, then
	// Log.mu.
	mu     sync.Mutex
	closed bool // (mu) Close or a crash: no more writes
	// onDisk is what the file holds, or may hold after a failed write
	// (the further of the two); none when onDisk.pos == 0.
	onDisk  activePoint // (mu)
	seg     *segment    // (mu) whose first written index entries are in its files
	written int         // (mu)
	// running: a writer goroutine is started and has not finished.
	running atomic.Bool
}

// pointCapture is the state of the active segment at the end of a flush,
// taken under Log.mu with the flush's end.
type pointCapture struct {
	seg       *segment
	cuts      int64
	pos, next int64
	maxTs     int64
	entries   int
}

// pointDue reports whether a flush that made s durable up to end should
// record a new point. Log.mu held (read).
func (l *Log) pointDue(s *segment, end int64) bool {
	return l.opts.ActivePointBytes >= 0 && !s.sealed && end > 0 && end >= s.pointDue.Load()
}

// startPointWrite starts the writer for c unless one is running.
func (l *Log) startPointWrite(c pointCapture) {
	if !l.point.running.CompareAndSwap(false, true) {
		return
	}
	go l.writePoint(c)
}

// writePoint records c as the active segment's recovery point (see the top
// of this file). Failures are logged: the previous point stays true.
func (l *Log) writePoint(c pointCapture) {
	defer l.point.running.Store(false)
	st := &l.point
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	s := c.seg
	p := activePoint{base: s.base, pos: c.pos, next: c.next, maxTs: c.maxTs, entries: c.entries, anchorPos: -1}
	from := 0
	if st.seg == s {
		from = min(st.written, c.entries)
	}
	var idx, tidx []byte
	var files [2]*fileRef
	l.mu.RLock()
	ok := !l.mu.closed && !s.sealed && s.cuts == c.cuts && l.active() == s && s.size >= c.pos &&
		s.idx.n >= c.entries && s.tidx.n >= c.entries &&
		s.idx.mp == nil && s.tidx.mp == nil // not being sealed: readers read the index from memory
	if ok {
		idx = append(idx, s.idx.data[from*offsetEntrySize:c.entries*offsetEntrySize]...)
		tidx = append(tidx, s.tidx.data[from*timeEntrySize:c.entries*timeEntrySize]...)
		p.anchorPos, p.anchorCRC, p.anchorEpoch, ok = anchorOf(s, c.pos, c.entries)
	}
	if ok {
		files = [2]*fileRef{s.idx.fileRef(), s.tidx.fileRef()}
		for i, f := range files {
			if f == nil || !f.tryAcquire() {
				for _, g := range files[:i] {
					g.release()
				}
				ok = false
				break
			}
		}
	}
	// The entries are written while the segment is still active and its
	// index in memory (Log.mu held): once a seal has mapped its index files,
	// readers read them through the mapping, and the point no longer
	// matters. The bytes are those the
	// files hold or will hold, but a write racing a reader of the mapping
	// is still a race (the race detector sees it through MemFS). The
	// fsyncs come after.
	var err error
	if ok {
		err = writeEntries(files[0], idx, int64(from*offsetEntrySize))
		if err == nil {
			err = writeEntries(files[1], tidx, int64(from*timeEntrySize))
		}
	}
	l.mu.RUnlock()
	if !ok {
		return
	}
	if err == nil && len(idx) > 0 {
		err = files[0].f.Sync()
	}
	if err == nil && len(tidx) > 0 {
		err = files[1].f.Sync()
	}
	files[0].release()
	files[1].release()
	if err == nil {
		st.seg, st.written = s, c.entries
		err = WriteCheckpoint(l.fs, join(l.dir, activePointFile), p.encode())
		if err != nil {
			// It may have failed after its rename (in the directory
			// fsync): the file may hold p, which the next directory fsync
			// makes durable, so truncations must treat it as on disk.
			st.onDisk = further(st.onDisk, p)
		}
	}
	if err != nil {
		l.logger.Warn("segment: active recovery point not written; an unclean restart scans more of the active segment", "err", err)
		return
	}
	st.onDisk = p
	s.pointDue.Store(p.pos + l.opts.ActivePointBytes)
}

// further returns whichever of a and b a truncation removes in more cases
// (dropPointLocked): the one in the later segment, or further in it.
func further(a, b activePoint) activePoint {
	if b.base > a.base || (b.base == a.base && b.pos > a.pos) {
		return b
	}
	return a
}

// anchorOf finds the last batch below pos in s, walking from the last of
// its first entries index entries. Log.mu held (read).
func anchorOf(s *segment, pos int64, entries int) (int64, uint32, int32, bool) {
	var at int64
	if entries > 0 {
		_, p := s.idx.at(entries - 1)
		at = int64(p)
	}
	data := s.mp.data[:pos]
	for at < pos {
		b, err := nextBatch(data, int(at))
		if err != nil {
			return 0, 0, 0, false
		}
		if at+int64(len(b)) == pos {
			return at, be.Uint32(b[offCRC:]), b.LeaderEpoch(), true
		}
		at += int64(len(b))
	}
	return 0, 0, 0, false
}

// writeEntries writes index entries at off (nothing to do when there are
// none: earlier ones were fsynced when written); the caller fsyncs.
func writeEntries(f *fileRef, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	_, err := f.f.WriteAt(b, off)
	return err
}

// dropPointLocked removes the point before a truncation cuts segment base
// at pos, when the point lies beyond the cut (base -1: any point), and
// leaves point.mu locked for the caller to unlock once the cut is
// published. appendMu held.
func (l *Log) dropPointLocked(base, pos int64) error {
	st := &l.point
	st.mu.Lock()
	// Index entries past the cut may be in the files: the next point
	// writes them all again.
	st.seg, st.written = nil, 0
	p := st.onDisk
	if p.pos == 0 || (base >= 0 && (p.base < base || (p.base == base && p.pos <= pos))) {
		return nil
	}
	if err := l.fs.Remove(join(l.dir, activePointFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	st.onDisk = activePoint{}
	return nil
}

// closePoint stops point writes for good (Close, a crash in tests): a
// writer running finishes first.
func (l *Log) closePoint() {
	l.point.mu.Lock()
	l.point.closed = true
	l.point.mu.Unlock()
}

// readPoint returns the active recovery point on disk, nil if none or
// unreadable (then Open scans the whole active segment).
func (l *Log) readPoint() *activePoint {
	path := join(l.dir, activePointFile)
	data, err := ReadCheckpoint(l.fs, path)
	if err != nil {
		if !os.IsNotExist(err) {
			l.logger.Warn("segment: unreadable active recovery point; scanning the whole active segment", "err", err)
		}
		return nil
	}
	p, err := decodeActivePoint(path, data)
	if err != nil {
		l.logger.Warn("segment: unreadable active recovery point; scanning the whole active segment", "err", err)
		return nil
	}
	return &p
}

// resumeScan recovers the active segment s from the point p instead of its
// first byte: it checks the anchor batch, loads and checks the index
// entries below the point and scans data from the point on. It returns
// false, with s's indexes closed and the reason logged, when anything does
// not match; the caller then scans the whole segment.
func (l *Log) resumeScan(s *segment, data []byte, p activePoint, epochs *epochCache, logStart int64) (scanResult, bool) {
	mismatch := func(reason string) (scanResult, bool) {
		l.logger.Warn("segment: active recovery point does not match the segment; scanning all of it",
			"file", s.logPath, "position", p.pos, "reason", reason)
		if s.idx.indexFile != nil {
			s.idx.close()
			s.tidx.close()
			s.idx, s.tidx = offsetIndex{}, timeIndex{}
		}
		return scanResult{}, false
	}
	if p.pos > int64(len(data)) {
		return mismatch(fmt.Sprintf("the segment holds %d bytes", len(data)))
	}
	b, err := nextBatch(data[:p.pos], int(p.anchorPos))
	if err == nil {
		err = b.Validate()
	}
	if err != nil {
		return mismatch("anchor batch: " + err.Error())
	}
	if p.anchorPos+int64(len(b)) != p.pos || b.LastOffset()+1 != p.next || be.Uint32(b[offCRC:]) != p.anchorCRC || b.LeaderEpoch() != p.anchorEpoch {
		return mismatch("another batch at the anchor position")
	}
	if err := l.openIndexes(s, true, p.entries, p.entries); err != nil {
		return mismatch(err.Error())
	}
	if s.idx.n != p.entries || s.tidx.n != p.entries {
		return mismatch(fmt.Sprintf("index files hold %d and %d of %d entries", s.idx.n, s.tidx.n, p.entries))
	}
	if err := s.idx.check(p.pos); err != nil {
		return mismatch(err.Error())
	}
	if err := s.tidx.check(); err != nil {
		return mismatch(err.Error())
	}
	sinceIndex := p.pos
	for i := 0; i < s.idx.n; i++ {
		if rel, _ := s.idx.at(i); rel != s.tidx.rel(i) {
			return mismatch(fmt.Sprintf("index entry %d is for relative offset %d, time index entry for %d", i, rel, s.tidx.rel(i)))
		}
	}
	if s.idx.n > 0 {
		rel, pos := s.idx.at(s.idx.n - 1)
		if s.base+int64(rel) >= p.next || s.tidx.lastTimestamp() > p.maxTs {
			return mismatch("last index entry past the point")
		}
		sinceIndex = p.pos - int64(pos)
	}
	epochs.truncateFromEnd(max(p.next, logStart+1))
	return scanBatches(data, s.base, int(p.pos), p.next, sinceIndex, p.maxTs, l.opts.IndexInterval, epochs, logStart), true
}

// keepPoint records, after Open, which point the file holds; one past the
// recovered active segment (a scan that found less than the point claimed)
// is removed, durably: appends follow, and a point that came back after a
// crash would be checked only by its anchor batch, which a batch written
// since can equal (the CRC does not cover the leader epoch).
func (l *Log) keepPoint(p *activePoint) error {
	if p == nil {
		return nil
	}
	act := l.active()
	if p.base > act.base || (p.base == act.base && p.pos > act.size) {
		err := l.fs.Remove(join(l.dir, activePointFile))
		if err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("segment: remove stale active recovery point: %w", err)
		}
		return l.fs.SyncDir(l.dir)
	}
	l.point.onDisk = *p
	return nil
}
