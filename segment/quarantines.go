package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What a log's scrub quarantines hold (quarantine.go), for the broker's
// sweep that removes the redundant ones, and their removal.
//
// A quarantine's offsets are told from its files alone:
//
//   - its segment files are named, as in the log, by their base offset
//     (<20 digits>.log); the oldest one's name is FirstOffset;
//   - its last offset is that of the last whole, CRC-valid batch of the
//     newest segment file holding one (read as DumpLog reads a damaged
//     file: every length checked against the bytes present), with that
//     batch's partition leader epoch. Newer files holding no batch (an
//     active segment nothing was written to) are passed over;
//   - that file must end in valid batches, zeros never written or a batch
//     cut short at the end of the file (a torn tail: never whole on this
//     disk, nothing to salvage). A corrupt batch there (or a file that
//     cannot be read) hides the offsets after it: the range is then
//     unknown (QuarantineRange.Unknown), and the sweep keeps the
//     quarantine for the operator.
//
// The copy of the truncated segment holds the bad batch: it is the newest
// file only when no later segment was set aside (a repair at a gap between
// segments sets aside no copy), and then the range is unknown.

// Quarantine is one of a log's scrub quarantines.
type Quarantine struct {
	// Name is the directory's name in the log's directory
	// (ScrubQuarantinePrefix and the base offset of the segment the
	// repair's mark named).
	Name string
	// SetAsideAt is when the repair set it aside (quarantineTimeFile). A
	// quarantine without that time (set aside by an earlier build, or its
	// file damaged) is given the now of the Quarantines call that finds it,
	// written down, so that its age counts from then across restarts.
	SetAsideAt time.Time
	// Bytes is the size of its files.
	Bytes int64
}

// QuarantineRange is what a quarantine's segment files hold.
type QuarantineRange struct {
	// FirstOffset is the base offset of its oldest segment file and
	// LastOffset the last offset of its last whole valid batch (both -1
	// when it holds no batch); LastEpoch is that batch's partition leader
	// epoch (-1 without one).
	FirstOffset, LastOffset int64
	LastEpoch               int32
	// Unknown, when set, says why the offsets it holds cannot be told: a
	// corrupt batch, or an unreadable file, in its newest segment file
	// holding batches.
	Unknown string
	// With Unknown set by a corrupt batch, where it is: UnknownFile is that
	// segment file's name in the quarantine, UnknownAt the byte at which
	// its valid batches end, and UnknownNext the offset after the last of
	// them (the file's base without one). A caller that knows more of the
	// batches (raftnode: one raft entry each, at consecutive offsets) can
	// bound the offsets after it. UnknownFile is "" for an unreadable file.
	UnknownFile            string
	UnknownAt, UnknownNext int64
}

// Quarantines lists the log's scrub quarantines, oldest mark first. now is
// written down as the time of one that records none (Quarantine.SetAsideAt).
func (l *Log) Quarantines(now time.Time) ([]Quarantine, error) {
	var out []Quarantine
	err := l.eachQuarantine(func(name, q string, files []string) error {
		ms, ok, err := readOffsetCheckpoint(l.fs, join(q, quarantineTimeFile))
		if err != nil || !ok {
			ms = now.UnixMilli()
			if err := writeOffsetCheckpoint(l.fs, join(q, quarantineTimeFile), ms); err != nil {
				return fmt.Errorf("segment: scrub quarantine %s: recording when it was first seen: %w", name, err)
			}
		}
		out = append(out, Quarantine{Name: name, SetAsideAt: time.UnixMilli(ms), Bytes: filesSize(l.fs, q, files)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// fileSize is the size of the file at path.
func fileSize(fs FS, path string) (int64, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return f.Size()
}

// QuarantineRange reads what the quarantine name (Quarantine.Name) holds:
// see the top of this file. It reads the newest segment files until one
// holds a batch (a whole file, once: the sweep remembers the answer). An
// error is one listing the directory.
func (l *Log) QuarantineRange(name string) (QuarantineRange, error) {
	r := QuarantineRange{FirstOffset: -1, LastOffset: -1, LastEpoch: -1}
	if err := checkQuarantineName(name); err != nil {
		return r, err
	}
	q := join(l.dir, name)
	files, err := l.fs.ReadDir(q)
	if err != nil {
		return r, fmt.Errorf("segment: scrub quarantine %s: %w", name, err)
	}
	var bases []int64
	for _, f := range files {
		if b, ok := parseSegmentName(f); ok {
			bases = append(bases, b)
		}
	}
	if len(bases) == 0 {
		return r, nil
	}
	slices.Sort(bases)
	for _, b := range slices.Backward(bases) {
		s, err := dumpSummary(l.fs, join(q, segmentName(b)+".log"))
		if err != nil {
			r.Unknown = fmt.Sprintf("segment file %s.log: %v", segmentName(b), err)
			return r, nil
		}
		if s.Corrupt {
			r.Unknown = fmt.Sprintf("segment file %s.log: %s", segmentName(b), s.End)
			r.UnknownFile, r.UnknownAt, r.UnknownNext = segmentName(b)+".log", s.ValidBytes, b
			if s.LastOffset >= 0 {
				r.UnknownNext = s.LastOffset + 1
			}
			return r, nil
		}
		if s.LastOffset >= 0 {
			r.FirstOffset, r.LastOffset, r.LastEpoch = bases[0], s.LastOffset, s.LastEpoch
			return r, nil
		}
	}
	return r, nil // files without a batch
}

// dumpSummary scans the segment file at path as DumpLog does.
func dumpSummary(fs FS, path string) (DumpSummary, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return DumpSummary{}, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return DumpSummary{}, err
	}
	return DumpLog(io.Discard, f, size, DumpOptions{})
}

// RemoveQuarantine removes the quarantine name (Quarantine.Name) and its
// files, durably. Removing one that is gone is not an error.
func (l *Log) RemoveQuarantine(name string) error {
	if err := checkQuarantineName(name); err != nil {
		return err
	}
	q := join(l.dir, name)
	files, err := l.fs.ReadDir(q)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("segment: removing scrub quarantine %s: %w", name, err)
	}
	for _, f := range files {
		if err := l.fs.Remove(join(q, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("segment: removing scrub quarantine %s: %w", name, err)
		}
	}
	if err := l.fs.Remove(q); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("segment: removing scrub quarantine %s: %w", name, err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return fmt.Errorf("segment: removing scrub quarantine %s: %w", name, err)
	}
	return nil
}

// checkQuarantineName refuses a name that is not a quarantine's.
func checkQuarantineName(name string) error {
	digits, ok := strings.CutPrefix(name, ScrubQuarantinePrefix)
	if _, err := strconv.ParseUint(digits, 10, 63); !ok || err != nil || len(digits) != 20 {
		return fmt.Errorf("segment: %q is not a scrub quarantine's name", name)
	}
	return nil
}
