package segment

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// fileRef is a reference-counted open file: the segment holds one reference
// and every mapping of it one more, so the descriptor outlives deleted
// segments until their last View is released.
type fileRef struct {
	f    File
	refs atomic.Int64
}

func newFileRef(f File) *fileRef {
	r := &fileRef{f: f}
	r.refs.Store(1)
	return r
}

func (r *fileRef) acquire() { r.refs.Add(1) }
func (r *fileRef) release() {
	if r.refs.Add(-1) == 0 {
		_ = r.f.Close()
	}
}

// segment is one .log file with its indexes. Fields marked (mu) are published
// under Log.mu by the writer, which also holds Log.appendMu; fields marked (w)
// belong to the writer.
type segment struct {
	base    int64
	logPath string
	file    *fileRef
	mp      *mapping    // (mu) current mapping of the .log; nil for an empty sealed file
	idx     offsetIndex // (mu) swapped only under Log.mu
	tidx    timeIndex   // (mu)

	size   int64 // (mu) bytes of whole batches. Invariant: size <= len(mp.data)
	next   int64 // (mu) offset after the last batch; base when empty
	maxTs  int64 // (mu) largest batch MaxTimestamp, -1 when empty
	sealed bool  // (mu)
	// cuts counts the truncations that cut this segment (mu). A flush raises
	// flushed only if no cut happened while it ran: bytes written after a
	// cut, at positions the flush covered, were not part of what it flushed.
	cuts int64

	capacity   int64     // (w) usable bytes of the active mapping
	sinceIndex int64     // (w) bytes appended since the last index entry
	rollTime   time.Time // (w) when the segment got its first batch, or was found non-empty by Open

	flushed  atomic.Int64 // bytes known durable
	uncached atomic.Int64 // bytes from the start dropped from the page cache (dropCache)
	badIndex atomic.Bool  // an index entry failed its check (indexedPos)
	pointDue atomic.Int64 // position at which the next active recovery point is due (activepoint.go)
}

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

func parseSegmentName(name string) (int64, bool) {
	s, ok := strings.CutSuffix(name, ".log")
	if !ok || len(s) != 20 {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v >= 0
}

func (l *Log) segPaths(base int64) (logPath, idxPath, tidxPath string) {
	n := join(l.dir, segmentName(base))
	return n + ".log", n + ".index", n + ".timeindex"
}

// createSegment creates the files of a new empty active segment. The caller
// syncs the directory.
func (l *Log) createSegment(base, capacity int64) (*segment, error) {
	logPath, idxPath, tidxPath := l.segPaths(base)
	f, err := l.fs.OpenFile(logPath, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
	if err != nil {
		return nil, l.ioErr(err)
	}
	s := &segment{base: base, logPath: logPath, file: newFileRef(f), next: base, maxTs: -1}
	fail := func(err error) (*segment, error) {
		s.closeFiles()
		_ = l.fs.Remove(logPath)
		_ = l.fs.Remove(idxPath)
		_ = l.fs.Remove(tidxPath)
		return nil, l.ioErr(err)
	}
	if err := f.Truncate(capacity); err != nil {
		return fail(err)
	}
	m, err := f.Map(int(capacity), false)
	if err != nil {
		return fail(err)
	}
	s.setMapping(m)
	s.capacity = capacity
	s.pointDue.Store(l.opts.ActivePointBytes)
	if err := l.openIndexes(s, true, 0, 0); err != nil {
		return fail(err)
	}
	return s, nil
}

func (s *segment) setMapping(m Mapping) {
	s.file.acquire()
	mp := newMapping(m, nil, false)
	f := s.file
	mp.onFree = func(error) { f.release() }
	trackMapping(s.logPath, mp)
	s.mp = mp
}

func (l *Log) openIndexes(s *segment, writable bool, keepIdx, keepTidx int) error {
	_, idxPath, tidxPath := l.segPaths(s.base)
	if writable {
		// Truncate away anything past the kept entries before mapping.
		for _, p := range []string{idxPath, tidxPath} {
			if keepIdx == 0 && keepTidx == 0 {
				f, err := l.fs.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644)
				if err != nil {
					return err
				}
				f.Close()
			}
		}
	}
	ix, err := openIndexFile(l.fs, idxPath, offsetEntrySize, l.opts.MaxIndexBytes, writable, keepIdx)
	if err != nil {
		return err
	}
	tx, err := openIndexFile(l.fs, tidxPath, timeEntrySize, l.opts.MaxIndexBytes/offsetEntrySize*timeEntrySize, writable, keepTidx)
	if err != nil {
		ix.close()
		return err
	}
	s.idx, s.tidx = offsetIndex{ix}, timeIndex{tx}
	return nil
}

// closeFiles drops the segment's own references (mapping, file, indexes).
func (s *segment) closeFiles() {
	if s.idx.indexFile != nil {
		s.idx.close()
	}
	if s.tidx.indexFile != nil {
		s.tidx.close()
	}
	if s.mp != nil {
		s.mp.release()
		s.mp = nil
	}
	s.file.release()
}

// batchAt returns the header fields needed to walk the segment at pos, a
// position below s.size where a batch with base offset want (-1: not known)
// must start. A sealed segment trusted after a clean shutdown was not
// scanned, so damage inside it surfaces here: a header that does not fit the
// segment, is malformed or breaks offset continuity is a *CorruptionError
// (never a slice out of range or a walk through record bytes). Log.mu held.
func (s *segment) batchAt(pos, want int64) (size int64, base, last, maxTs int64, err error) {
	b, err := nextBatch(s.mp.data[:s.size], int(pos))
	if err == nil && want >= 0 && b.BaseOffset() != want {
		err = corruptf("batch has offset %d, expected %d", b.BaseOffset(), want)
	}
	if err != nil {
		return 0, 0, 0, 0, s.corruptAt(pos, want, err)
	}
	return int64(len(b)), b.BaseOffset(), b.LastOffset(), b.MaxTimestamp(), nil
}

// corruptAt names a bad batch at pos in s; a torn-looking batch (one running
// past the end) is corruption here, where a whole batch must be.
func (s *segment) corruptAt(pos, want int64, err error) error {
	if !errors.Is(err, ErrCorrupt) {
		err = fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return &CorruptionError{File: s.logPath, Position: pos, Offset: want, Err: err}
}

// findBatch returns the position of the batch containing offset in s (or
// of the first batch after it, or s.size). Log.mu held.
func (l *Log) findBatch(s *segment, offset int64) (int64, error) {
	pos := l.indexedPos(s, offset)
	want := int64(-1) // indexedPos checked the base offset of an indexed batch
	if pos == 0 {
		want = s.base
	}
	for pos < s.size {
		size, _, last, _, err := s.batchAt(pos, want)
		if err != nil {
			return 0, err
		}
		if last >= offset {
			return pos, nil
		}
		pos += size
		want = last + 1
	}
	return s.size, nil
}

// indexedPos returns where the index says to start looking for offset in s,
// after checking that a batch with the indexed offset starts there. After a
// clean shutdown a sealed segment's index is trusted with only its last entry
// checked against the log (checkTrusted); an interior entry pointing
// elsewhere, in a damaged file, would make the walk read record bytes as
// batch lengths. Such an entry is ignored (logged once per segment): the walk
// starts at the segment's first batch, which is always right, only slower.
// Log.mu held.
func (l *Log) indexedPos(s *segment, offset int64) int64 {
	rel, pos := s.idx.lookup(offset - s.base)
	if pos == 0 {
		return 0
	}
	if pos < s.size {
		if b, err := nextBatch(s.mp.data[:s.size], int(pos)); err == nil && b.BaseOffset() == s.base+rel {
			return pos
		}
	}
	if s.badIndex.CompareAndSwap(false, true) {
		l.logger.Error("segment: index entry does not point at its batch; reading the segment from its start (delete the .index and .timeindex files while the node is stopped to rebuild them)",
			"file", s.logPath, "offset", s.base+rel, "position", pos)
	}
	return 0
}

// tryAcquire adds a reference unless the file was already closed.
func (r *fileRef) tryAcquire() bool {
	for {
		n := r.refs.Load()
		if n <= 0 {
			return false
		}
		if r.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

const osCreate = os.O_CREATE | os.O_RDWR
