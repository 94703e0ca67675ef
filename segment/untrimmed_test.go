package segment

import (
	"fmt"
	"testing"
)

// TestCrashUntrimmedSealedSegment: under SyncNever a segment is sealed
// (truncated from its preallocated size to its batches) without an fsync,
// and fsynced later in the background. A power cut in between can keep its
// batches (written back by the kernel) but not the truncation: the sealed
// file ends in zeros. Nothing is missing when its batches reach the next
// segment's base offset: Open must keep the whole log, not fail (or, with
// TruncateOnCorruption, which a node sets for interval and never, delete
// every later segment).
func TestCrashUntrimmedSealedSegment(t *testing.T) {
	base, bs, opts := buildClosedLog(t, 60, 2048)
	opts.Sync = SyncNever
	first := logPaths(t, base)[0]
	var trimmed int
	if err := base.Corrupt(first, func(d []byte) []byte { trimmed = len(d); return d }); err != nil {
		t.Fatal(err)
	}
	for _, zeros := range []int{1, HeaderSize, 2048} {
		for _, truncate := range []bool{false, true} {
			what := fmt.Sprintf("%d zeros, TruncateOnCorruption=%v", zeros, truncate)
			fs := base.CrashClone()
			for _, f := range []string{cleanShutdownFile, recoveryPointFile} {
				if err := fs.Remove("/log/" + f); err != nil { // scan every segment
					t.Fatal(err)
				}
			}
			if err := fs.Corrupt(first, func(d []byte) []byte { return append(d, make([]byte, zeros)...) }); err != nil {
				t.Fatal(err)
			}
			o := opts
			o.TruncateOnCorruption = truncate
			expectPrefix(t, fs, o, bs, what)
			// The zeros are gone for good: the segment was trimmed.
			var size int
			if err := fs.Corrupt(first, func(d []byte) []byte { size = len(d); return d }); err != nil {
				t.Fatal(err)
			}
			if size != trimmed {
				t.Fatalf("%s: %s is %d bytes after recovery, want %d", what, first, size, trimmed)
			}
		}
	}
}
