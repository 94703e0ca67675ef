// Package segmenttest damages segment files for tests, as rot would.
package segmenttest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"paymentlog/segment"
)

// RotBatch flips a bit in the last byte of the batch whose base offset is
// offset, in the segment file of the log in dir (on the OS's file system)
// that holds it: the newest one whose base is at or below offset. It
// returns that file's base offset.
func RotBatch(tb testing.TB, dir string, offset int64) (base int64) {
	tb.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("segment files in %s: %v %v", dir, names, err)
	}
	file := ""
	for _, n := range names { // Glob sorts: the 20-digit names in offset order
		if b, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), ".log"), 10, 64); err == nil && b <= offset {
			file, base = n, b
		}
	}
	if file == "" {
		tb.Fatalf("no segment file in %s holds offset %d", dir, offset)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		tb.Fatal(err)
	}
	at, pos := -1, 0
	_, _ = segment.SplitBatches(data, func(b segment.Batch) error { // stops at the zeros
		if b.BaseOffset() == offset {
			at = pos + len(b) - 1
		}
		pos += len(b)
		return nil
	})
	if at < 0 {
		tb.Fatalf("no batch at offset %d in %s", offset, file)
	}
	f, err := os.OpenFile(file, os.O_WRONLY, 0)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte{data[at] ^ 0x40}, int64(at)); err != nil {
		tb.Fatal(err)
	}
	return base
}
