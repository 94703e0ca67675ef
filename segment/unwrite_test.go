package segment

import (
	"errors"
	"strings"
	"syscall"
	"testing"
)

// appendAcked appends n batches in epoch 1, each made durable, and returns
// copies of them.
func appendAcked(t *testing.T, l *Log, n int) []Batch {
	t.Helper()
	var acked []Batch
	for i := range n {
		b := testBatch(i, 4, int64(i))
		info := mustAppend(t, l, b, 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	return acked
}

// crashAndReopen crashes l and opens its directory again; the log must end
// at leo, before the failed append, and hold exactly acked.
func crashAndReopen(t *testing.T, l *Log, opts Options, leo int64, acked []Batch) *Log {
	t.Helper()
	l.crashForTest()
	l = mustOpen(t, "/log", opts)
	if got := l.LogEndOffset(); got != leo {
		t.Fatalf("after a restart the log ends at %d, want %d: the failed append came back", got, leo)
	}
	checkBatches(t, readAll(t, l, 0), acked)
	return l
}

// TestFailedAppendLeavesNoBatch: an append that fails after its bytes
// reached the active segment must not leave a batch that recovery, which
// scans the active segment past its end, takes for part of the log. The
// refused batch was stamped with the log end offset, so offset continuity
// does not tell it apart, and its CRC is good.
func TestFailedAppendLeavesNoBatch(t *testing.T) {
	// The epoch checkpoint write fails with an I/O error after the batch
	// opening epoch 2 was copied: the log fails, and a restart (a process
	// kill: the page cache keeps every byte) recovers.
	t.Run("epoch checkpoint I/O error", func(t *testing.T) {
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 1 << 20, Logger: quietLogger}
		l := mustOpen(t, "/log", opts)
		acked := appendAcked(t, l, 3)
		leo := l.LogEndOffset()
		fs.SetFault(func(op FaultOp, path string) error {
			if op == OpWrite && strings.HasSuffix(path, epochFile+".tmp") {
				return syscall.EIO
			}
			return nil
		})
		if _, err := l.Append(ctx, testBatch(3, 4, 3), 2); !errors.Is(err, ErrLogFailed) {
			t.Fatalf("append with a failing epoch checkpoint: %v, want ErrLogFailed", err)
		}
		fs.SetFault(nil)
		l = crashAndReopen(t, l, opts, leo, acked)
		defer l.Close()
		if e := l.LatestEpoch(); e != 1 {
			t.Fatalf("latest epoch %d after the restart, want 1", e)
		}
	})

	// A batch refused on a full disk (its epoch checkpoint did not fit) is
	// retried with the same bytes, and the retry's write fails half-way.
	// The retry's first half and a remnant of the refused batch's second
	// half would make a whole batch with a good CRC.
	t.Run("partial retry over a refused batch", func(t *testing.T) {
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 1 << 20, Logger: quietLogger}
		l := mustOpen(t, "/log", opts)
		acked := appendAcked(t, l, 3)
		leo := l.LogEndOffset()
		refused := testBatch(3, 4, 3)
		retry := append(Batch(nil), refused...)
		fs.SetCapacity(fs.Used() + int64(len(refused))) // room for the batch, none for the checkpoint
		if _, err := l.Append(ctx, refused, 2); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("append on a full disk: %v, want ErrDiskFull", err)
		}
		if err := l.Failed(); err != nil {
			t.Fatalf("a full disk failed the log: %v", err)
		}
		fs.SetCapacity(-1)
		logPath, _, _ := l.segPaths(0)
		fs.SetFault(func(op FaultOp, path string) error {
			if op == OpWrite && path == logPath {
				return syscall.EIO // MemFS writes the first half, then fails
			}
			return nil
		})
		if _, err := l.Append(ctx, retry, 2); !errors.Is(err, ErrLogFailed) {
			t.Fatalf("retry with a failing write: %v, want ErrLogFailed", err)
		}
		fs.SetFault(nil)
		l = crashAndReopen(t, l, opts, leo, acked)
		defer l.Close()
	})
}
