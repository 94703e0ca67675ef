package segment

import (
	"errors"
	"fmt"
)

// Errors.
var (
	ErrCorrupt        = errors.New("segment: corrupt batch") // a bad batch where a good one must be
	ErrTornTail       = errors.New("segment: torn tail")     // a partial write at the end of the active segment
	ErrRecordTooLarge = errors.New("segment: record batch too large")
	ErrClosed         = errors.New("segment: log closed")
	ErrNonContiguous  = errors.New("segment: batch offset not contiguous with log end")
	// ErrOffsetOverflow is returned for a batch whose last offset, or the log
	// end after it, would not fit in an int64. Nothing was written.
	ErrOffsetOverflow = errors.New("segment: batch offsets overflow int64")

	// ErrOffsetOutOfRange is matched by errors.Is on an *OffsetOutOfRangeError.
	ErrOffsetOutOfRange = errors.New("segment: offset out of range")
	// ErrDiskFull is returned when the file system has no room for an append
	// or a new segment. Nothing was written; the log stays usable.
	ErrDiskFull = errors.New("segment: disk full")
	// ErrLogFailed wraps the I/O error (typically a failed fsync) after which
	// the log refuses writes: the state of unflushed pages is unknown, so the
	// log must be closed and reopened, which recovers every durable batch.
	ErrLogFailed = errors.New("segment: log failed after an I/O error; reopen to recover")
)

// OffsetOutOfRangeError is returned by Read for offsets outside [start, end].
type OffsetOutOfRangeError struct{ Requested, Start, End int64 }

func (e *OffsetOutOfRangeError) Error() string {
	return fmt.Sprintf("segment: offset %d out of range [%d, %d]", e.Requested, e.Start, e.End)
}

// Is makes errors.Is(err, ErrOffsetOutOfRange) true.
func (e *OffsetOutOfRangeError) Is(target error) bool { return target == ErrOffsetOutOfRange }

// IsCorruption reports whether err is or wraps ErrCorrupt.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorrupt) }

// CorruptionError names a bad batch found where a good one must be: inside a
// sealed segment (or a gap between segments). It wraps ErrCorrupt.
type CorruptionError struct {
	File     string // path of the .log file
	Position int64  // byte position of the bad batch in File
	Offset   int64  // the offset the bad batch should have started with
	Err      error  // the reason; wraps ErrCorrupt
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("segment: corruption in %s at byte %d (expected offset %d): %v", e.File, e.Position, e.Offset, e.Err)
}

func (e *CorruptionError) Unwrap() error { return e.Err }

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
