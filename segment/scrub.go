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

// ScrubPoint is where a scrub goes on: a sealed segment's base offset and a
// byte position in it. The zero value starts at the first segment.
type ScrubPoint struct{ Base, Pos int64 }

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
	l.mu.RLock()
	if l.mu.closed {
		l.mu.RUnlock()
		return p, 0, false, ErrClosed
	}
	segs := l.mu.segs
	i := sort.Search(len(segs)-1, func(i int) bool { return segs[i].base >= p.Base }) // sealed ones only
	if i < len(segs)-1 && segs[i].base > p.Base {
		p.Pos = 0
	}
	for i < len(segs)-1 && (segs[i].mp == nil || p.Pos >= segs[i].size) {
		i++ // empty, or scrubbed to its end
		p.Pos = 0
	}
	if i >= len(segs)-1 {
		l.mu.RUnlock()
		return ScrubPoint{}, 0, true, nil
	}
	s := segs[i]
	mp, size, base, logPath := s.mp, s.size, s.base, s.logPath
	mp.acquire()
	l.mu.RUnlock()
	defer mp.release()

	pos := p.Pos
	want := int64(-1)
	if pos == 0 {
		want = base
	}
	for pos < size && (checked == 0 || checked < maxBytes) {
		b, berr := nextBatch(mp.data[:size], int(pos))
		if berr == nil {
			berr = b.Validate()
		}
		if berr == nil && want >= 0 && b.BaseOffset() != want {
			berr = corruptf("batch has offset %d, expected %d", b.BaseOffset(), want)
		}
		if berr != nil {
			if !l.stillHolds(s, mp) {
				return ScrubPoint{Base: base + 1}, checked, false, nil // deleted or rewritten since
			}
			if !errors.Is(berr, ErrCorrupt) {
				berr = fmt.Errorf("%w: %w", ErrCorrupt, berr)
			}
			cerr := &CorruptionError{File: logPath, Position: pos, Offset: want, Err: berr}
			return p, checked, false, l.scrubFailed(base, cerr)
		}
		pos += int64(len(b))
		checked += int64(len(b))
		want = b.LastOffset() + 1
	}
	return ScrubPoint{Base: base, Pos: pos}, checked, false, nil
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

// scrubFailed marks the segment at base for repair and fails the log.
func (l *Log) scrubFailed(base int64, cerr *CorruptionError) error {
	err := fmt.Errorf("%w: %w", ErrScrubCorrupt, cerr)
	if werr := writeOffsetCheckpoint(l.fs, join(l.dir, scrubMarkFile), base); werr != nil {
		err = fmt.Errorf("%w (and the mark for repair at the next open was not written: %v)", err, werr)
	} else if werr := l.fs.SyncDir(l.dir); werr != nil {
		err = fmt.Errorf("%w (and the mark for repair at the next open may not be durable: %v)", err, werr)
	}
	l.logger.Error("segment: scrub found a corrupt batch in a sealed segment; the log fails, and the next open truncates at it",
		"file", cerr.File, "position", cerr.Position, "offset", cerr.Offset, "err", cerr.Err)
	l.fail(err) //nolint:errcheck // err is returned
	return err
}
