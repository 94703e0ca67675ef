package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// ScrubQuarantinePrefix names the directory, inside the log's, where an
// open that repairs a scrub's mark (scrub.go) sets aside what the repair
// takes out of the log: a copy of the segment it truncates, whole, and the
// later segments themselves, moved (their files keep their names: the base
// offset of each), with quarantineTimeFile saying when. The replica fetches
// those records again from its leader; should it have held the only copy
// (a topic of replication factor 1, or every other replica lost), they are
// not destroyed: the operator salvages them from there (`paymentlog log
// dump`) and removes the directory. A mark whose segment checks out sets
// nothing aside.
//
// The directory goes without the operator only when it is provably
// redundant: the broker's sweep (node/broker's quarantine_sweep.go, after
// --log-scrub-quarantine-retention) removes it (RemoveQuarantine) once the
// replica holds, committed and in the same leader epoch, the last offset
// the quarantine holds (QuarantineRange: the last whole batch of its newest
// segment file), or its log start has passed it, and the replica is in
// sync with another. It never removes one of a partition of replication
// factor 1, nor one whose offsets cannot be told. Deleting the partition
// removes it too. The metadata log's (raftnode's scrub_repair.go) are
// removed by raftnode's sweep (scrub_quarantine.go), on the same retention.
const ScrubQuarantinePrefix = "scrub-quarantine-"

// quarantineTimeFile, in a quarantine, holds when it was set aside (an
// offset checkpoint of unix milliseconds; Quarantines).
const quarantineTimeFile = "set-aside-at"

// setAsideForRepair keeps, in the quarantine of the segment a scrub marked
// (mark), a copy of the segment at cut (about to be truncated; -1: none)
// and the segments at later (about to be removed: moved instead, newest
// first). It may run again after a crash part way: a copy already made is
// kept, and files already moved are not there to move.
func (l *Log) setAsideForRepair(mark, cut int64, later []int64) error {
	q := join(l.dir, fmt.Sprintf("%s%020d", ScrubQuarantinePrefix, mark))
	if err := l.fs.MkdirAll(q, 0o755); err != nil {
		return fmt.Errorf("segment: scrub quarantine: %w", err)
	}
	// Written first: an attempt that crashes later keeps the first time.
	if err := WriteSetAsideAt(l.fs, q, l.opts.Now()); err != nil {
		return err
	}
	if cut >= 0 {
		name := segmentName(cut) + ".log"
		if f, err := l.fs.OpenFile(join(q, name), os.O_RDONLY, 0); err == nil {
			f.Close() // copied by an earlier attempt
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("segment: scrub quarantine: %w", err)
		} else if err := CopyFile(l.fs, join(l.dir, name), join(q, name+".partial")); err != nil {
			return fmt.Errorf("segment: scrub quarantine: copy %s: %w", name, err)
		} else if err := l.fs.Rename(join(q, name+".partial"), join(q, name)); err != nil {
			return fmt.Errorf("segment: scrub quarantine: %w", err)
		}
	}
	for _, b := range slices.Backward(later) {
		for _, ext := range []string{".log", ".index", ".timeindex"} {
			n := segmentName(b) + ext
			if err := l.fs.Rename(join(l.dir, n), join(q, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("segment: scrub quarantine: %w", err)
			}
		}
	}
	if err := l.fs.SyncDir(q); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.logger.Warn("segment: set aside what the repair of a scrub's mark takes out of the log (a copy of the segment truncated, the later segments); "+
		"the node removes the directory once the replica holds those records again in sync with another (--log-scrub-quarantine-retention); salvage from it a partition that had no other copy",
		"quarantine", q, "truncated_segment", cut, "later_segments", len(later))
	return nil
}

// WriteSetAsideAt records in the quarantine directory q (made already)
// that it was set aside at now, unless it records a time already (an
// earlier attempt's, which is kept): Quarantine.SetAsideAt, from which the
// sweep counts its retention. This package's repair and raftnode's of its
// metadata log call it before they set anything aside.
func WriteSetAsideAt(fs FS, q string, now time.Time) error {
	if _, ok, err := readOffsetCheckpoint(fs, join(q, quarantineTimeFile)); err == nil && ok {
		return nil
	}
	if err := writeOffsetCheckpoint(fs, join(q, quarantineTimeFile), now.UnixMilli()); err != nil {
		return fmt.Errorf("segment: scrub quarantine: %w", err)
	}
	return nil
}

// CopyFile copies src to dst (created or replaced) in fs and syncs it: a
// repair's copies into a quarantine (this package's, and raftnode's of
// its metadata log).
func CopyFile(fs FS, src, dst string) error {
	in, err := fs.OpenFile(src, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	size, err := in.Size()
	if err != nil {
		return err
	}
	out, err := fs.OpenFile(dst, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	r := io.NewSectionReader(in, 0, size)
	buf := make([]byte, 1<<20)
	for off := int64(0); ; {
		n, rerr := r.Read(buf)
		if n > 0 {
			if _, err := out.WriteAt(buf[:n], off); err != nil {
				out.Close()
				return err
			}
			off += int64(n)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			out.Close()
			return rerr
		}
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// QuarantinedBytes is the size of the files repairs have set aside in the
// log's directory (ScrubQuarantinePrefix), 0 when there are none or they
// cannot be read: what an operator still has to salvage or remove.
func (l *Log) QuarantinedBytes() int64 {
	var n int64
	l.eachQuarantine(func(_, q string, files []string) error {
		n += filesSize(l.fs, q, files)
		return nil
	})
	return n
}

// eachQuarantine calls fn with the name, path and files of each of the
// log's scrub quarantines (ScrubQuarantinePrefix) that can be listed, in
// the order of their names, until fn fails; an error is fn's or one
// listing the log's directory.
func (l *Log) eachQuarantine(fn func(name, q string, files []string) error) error {
	names, err := l.fs.ReadDir(l.dir)
	if err != nil {
		return fmt.Errorf("segment: scrub quarantines: %w", err)
	}
	for _, name := range names {
		if !strings.HasPrefix(name, ScrubQuarantinePrefix) {
			continue
		}
		q := join(l.dir, name)
		files, err := l.fs.ReadDir(q)
		if err != nil {
			continue // not a directory, or gone meanwhile
		}
		if err := fn(name, q, files); err != nil {
			return err
		}
	}
	return nil
}

// filesSize is the size of the files in dir that can be read.
func filesSize(fs FS, dir string, files []string) int64 {
	var n int64
	for _, f := range files {
		if size, err := fileSize(fs, join(dir, f)); err == nil {
			n += size
		}
	}
	return n
}
