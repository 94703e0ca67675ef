package segment

import (
	"errors"
	"fmt"
	"sort"
)

// Scrubbing finds silent corruption (bit rot, a bad sector, a stray write)
// in sealed segments before a reader, or a failover onto this replica,
// meets it. Recovery checks only what a crash may have left unfinished: a
// sealed segment below the recovery point is trusted at open, and readers
// serve its bytes without checking their CRC. Scrub reads them, batch by
// batch, and checks each batch's length, header, CRC-32C and offset.
//
// On a corrupt batch the log marks the segment for repair (scrubMarkFile,
// written durably) and fails (Options.OnFailure): the node stops, as for
// any storage failure, and the next Open re-checks that segment and the
// later ones as after a crash; at the first bad batch it sets aside a copy
// of the segment it truncates and the later segments themselves
// (quarantine.go: nothing is destroyed, should this replica hold the only
// copy), truncates there and reports the log as torn
// (TornAtOpen: the node registers the partition as torn, and the
// controller takes it out of the partition's eligible leader replicas), and
// the replica fetches what it lost again from its leader.
// A segment whose re-check finds nothing wrong (the damage was in memory)
// is left as it is.

// scrubMarkFile names the segment (its base offset, as an offset
// checkpoint) a scrub found corrupt: the next Open re-checks from it.
const scrubMarkFile = "scrub-corrupt-segment"

// ScrubPoint is where a scrub goes on: a segment's base offset and a byte
// position in it. The zero value starts at the first segment. A point that
// Scrub returned also names the segment's mapping and the offset expected
// at Pos: a segment rewritten or replaced at the same base since (a
// compaction, a log reset) is then scrubbed from its start, not from a
// position that may fall inside a batch of its new contents.
type ScrubPoint struct {
	Base, Pos int64
	mp        *mapping // the mapping Pos is in; nil: unknown
	next      int64    // offset of the batch at Pos (when mp is set)
}

// ErrScrubCorrupt wraps the *CorruptionError of a batch Scrub found bad.
var ErrScrubCorrupt = errors.New("segment: scrub found a corrupt batch")

// Scrub checks at least one and at most about maxBytes of batches of sealed
// segments from p on. It returns where the next call goes on and the bytes
// checked; done when no sealed segment is left after p (the pass is over:
// start the next one from the zero ScrubPoint). A corrupt batch marks the
// segment for repair at the next Open, fails the log and returns an error
// wrapping ErrScrubCorrupt and the *CorruptionError. Bytes are read through
// the page cache (the node drops durable ones behind its window, so old
// segments come from the disk). Segments deleted or rewritten meanwhile are
// skipped.
func (l *Log) Scrub(p ScrubPoint, maxBytes int64) (next ScrubPoint, checked int64, done bool, err error) {
	return l.scrub(p, maxBytes, -1)
}

// ScrubBelow is Scrub that also checks the active segment, its batches
// below offset below (the caller's stable point: bytes no truncation or
// write can change while it reads them, e.g. a raft log's committed and
// durable entries); the pass is done at the first batch at or past below.
// A corrupt batch there is handled as in a sealed segment: marked (the
// active segment's base), the log failed, and the next Open truncates at it
// (TornAtOpen; it sets nothing aside: the active segment is scanned as
// after a crash).
func (l *Log) ScrubBelow(p ScrubPoint, maxBytes, below int64) (next ScrubPoint, checked int64, done bool, err error) {
	return l.scrub(p, maxBytes, max(below, 0))
}

// scrub is Scrub, and ScrubBelow when below >= 0.
func (l *Log) scrub(p ScrubPoint, maxBytes, below int64) (next ScrubPoint, checked int64, done bool, err error) {
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return p, 0, false, ErrClosed
	}
	segs := l.mu.segs
	n := len(segs) - 1 // sealed ones only
	if below >= 0 {
		n = len(segs)
	}
	i := sort.Search(n, func(i int) bool { return segs[i].base >= p.Base })
	if i < n && (segs[i].base > p.Base || (p.mp != nil && segs[i].mp != p.mp)) {
		p.Pos, p.mp = 0, nil
	}
	for i < n && (segs[i].mp == nil || p.Pos >= segs[i].size) {
		i++ // empty, or scrubbed to its end
		p.Pos, p.mp = 0, nil
	}
	if i >= n {
		l.mu.RUnlock()
		return ScrubPoint{}, 0, true, nil
	}
	s := segs[i]
	mp, size, base, logPath := s.mp, s.size, s.base, s.logPath
	active := i == len(segs)-1
	mp.acquire()
	l.mu.RUnlock()
	defer mp.release()

	pos := p.Pos
	want := int64(-1)
	switch {
	case pos == 0:
		want = base
	case p.mp == mp:
		want = p.next
	case active:
		pos, want = 0, base // where Pos falls is unknown: from the start
	}
	for pos < size && (checked == 0 || checked < maxBytes) {
		if active && want >= below {
			break // the batches from here on may still change
		}
		b, berr := nextBatch(mp.data[:size], int(pos))
		if berr == nil {
			berr = b.Validate()
		}
		if berr == nil && want >= 0 && b.BaseOffset() != want {
			berr = corruptf("batch has offset %d, expected %d", b.BaseOffset(), want)
		}
		if berr == nil && active && b.LastOffset() >= below {
			break
		}
		if berr != nil {
			if !l.stillHolds(s, mp) || (active && !l.stillBelowEnd(s, pos)) {
				return ScrubPoint{Base: base + 1}, checked, false, nil // deleted or rewritten since
			}
			if !errors.Is(berr, ErrCorrupt) {
				berr = fmt.Errorf("%w: %w", ErrCorrupt, berr)
			}
			cerr := &CorruptionError{File: logPath, Position: pos, Offset: want, Err: berr}
			return p, checked, false, l.scrubFailed(base, cerr, active)
		}
		pos += int64(len(b))
		checked += int64(len(b))
		want = b.LastOffset() + 1
	}
	if active && (pos >= size || want >= below) {
		return ScrubPoint{}, checked, true, nil // the pass is over
	}
	return ScrubPoint{Base: base, Pos: pos, mp: mp, next: want}, checked, false, nil
}

// stillBelowEnd reports whether s still holds bytes past pos (the active
// segment was not cut back to or below it since).
func (l *Log) stillBelowEnd(s *segment, pos int64) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return s.size > pos
}

// ScrubMarkPath is the file in dir that holds a scrub's mark for repair.
func ScrubMarkPath(dir string) string { return join(dir, scrubMarkFile) }

// ScrubMarked reports whether a scrub marked the log in dir for repair (see
// Log.Scrub) and the base offset of the segment it marked: the next Open
// truncates the log at the first bad batch from there on. A caller that
// must know before the repair takes entries out (a raft log whose node
// acknowledged them) checks it before Open.
func ScrubMarked(fsys FS, dir string) (base int64, marked bool, err error) {
	if fsys == nil {
		fsys = OSFS{}
	}
	base, marked, err = readOffsetCheckpoint(fsys, join(dir, scrubMarkFile))
	if err != nil {
		return 0, false, fmt.Errorf("segment: scrub mark: %w", err)
	}
	return base, marked, nil
}

// stillHolds reports whether s is still one of the log's segments, mapped
// by mp.
func (l *Log) stillHolds(s *segment, mp *mapping) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for _, x := range l.mu.segs {
		if x == s {
			return s.mp == mp
		}
	}
	return false
}

// scrubFailed marks the segment at base (the active one: active) for
// repair and fails the log.
func (l *Log) scrubFailed(base int64, cerr *CorruptionError, active bool) error {
	err := fmt.Errorf("%w: %w", ErrScrubCorrupt, cerr)
	if werr := writeOffsetCheckpoint(l.fs, join(l.dir, scrubMarkFile), base); werr != nil {
		err = fmt.Errorf("%w (and the mark for repair at the next open was not written: %v)", err, werr)
	} else if werr := l.fs.SyncDir(l.dir); werr != nil {
		err = fmt.Errorf("%w (and the mark for repair at the next open may not be durable: %v)", err, werr)
	}
	msg := "segment: scrub found a corrupt batch in a sealed segment; the log fails, and the next open truncates at it"
	if active {
		msg = "segment: scrub found a corrupt batch in the active segment, below the point it was told is stable; the log fails, and the next open truncates at it"
	}
	l.logger.Error(msg, "file", cerr.File, "position", cerr.Position, "offset", cerr.Offset, "err", cerr.Err)
	l.fail(err) //nolint:errcheck // err is returned
	return err
}
