package segment

import (
	"errors"
	"syscall"

	"golang.org/x/sys/unix"
)

// A gap is a range of zeros (or a hole) that recovery's scan stops at while
// the file holds data after it. Appends write a segment from its start
// without gaps, but a crash can still leave one: the kernel writes dirty
// pages back in any order, so with --fsync interval or never (or before
// the flush that would have acknowledged them) a later page can reach the
// disk while an earlier one, never written back, reads as zeros or is a
// hole. Batches after a gap cannot be kept (offsets are contiguous), so
// the cut is right; but it drops data, and recovery says so instead of
// taking the gap for the end of the segment.

// dataSeeker is implemented by files that can find their next data range
// (lseek SEEK_DATA, then SEEK_HOLE for its end).
type dataSeeker interface {
	// DataAfter returns the first range [start, end) of data at or after
	// off; ok is false when there is none before the end of the file.
	DataAfter(off int64) (start, end int64, ok bool, err error)
}

// DataAfter implements dataSeeker with lseek(SEEK_DATA) and lseek(SEEK_HOLE).
func (f *osFile) DataAfter(off int64) (start, end int64, ok bool, err error) {
	fd := int(f.f.Fd())
	if start, err = seekRetry(fd, off, unix.SEEK_DATA); err != nil {
		if errors.Is(err, syscall.ENXIO) { // no data at or after off
			return 0, 0, false, nil
		}
		return 0, 0, false, err
	}
	if end, err = seekRetry(fd, start, unix.SEEK_HOLE); err != nil {
		return 0, 0, false, err
	}
	return start, end, true, nil
}

func seekRetry(fd int, off int64, whence int) (int64, error) {
	for {
		pos, err := unix.Seek(fd, off, whence)
		if err != syscall.EINTR {
			return pos, err
		}
	}
}

// DataAfter implements dataSeeker through the wrapped file (not tracked:
// a seek does not wait for the disk).
func (f *trackedFile) DataAfter(off int64) (start, end int64, ok bool, err error) {
	if d, ok := f.File.(dataSeeker); ok {
		return d.DataAfter(off)
	}
	return 0, 0, false, errNoDataEnd
}

// firstDataPast returns the position of the first non-zero byte of data
// in [from, size), or -1 when there is none. data maps at least size bytes
// of f. Where f can list its data ranges only those are read, so no hole
// is faulted in (on a full tmpfs that would be SIGBUS, see dataEnder);
// otherwise at most scanned, the part recovery already may read, is.
func firstDataPast(f File, data []byte, from, size, scanned int64) int64 {
	if d, ok := f.(dataSeeker); ok {
		for pos := from; pos < size; {
			start, end, ok, err := d.DataAfter(pos)
			if err != nil {
				break // fall back to the scanned part
			}
			if !ok || start >= size {
				return -1
			}
			end = min(max(end, start), size)
			if i := firstNonZero(data[start:end]); i >= 0 {
				return start + int64(i)
			}
			if end <= pos { // no progress: a file system that lies
				break
			}
			pos = end
		}
	}
	if from >= scanned {
		return -1
	}
	if i := firstNonZero(data[from:scanned]); i >= 0 {
		return from + int64(i)
	}
	return -1
}

func firstNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}
