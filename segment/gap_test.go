package segment

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sizedBatch builds a one-record batch of exactly n bytes (record lengths
// are varints, so the key's length fills what the value's cannot).
func sizedBatch(t *testing.T, seed byte, n int) Batch {
	t.Helper()
	build := func(k, v int) Batch {
		b := NewBuilder(BuilderOptions{})
		b.Add(int64(seed), bytes.Repeat([]byte{'k'}, k), bytes.Repeat([]byte{'a' + seed%26}, v), nil)
		return b.Build()
	}
	for k := 0; k < 8; k++ {
		for v := max(0, n-len(build(k, 0))-16); v <= n; v++ {
			if b := build(k, v); len(b) == n {
				return b
			} else if len(b) > n {
				break
			}
		}
	}
	t.Fatalf("no one-record batch of %d bytes", n)
	return nil
}

// gapLog writes batches into an active segment and closes the log, then
// removes the clean-shutdown mark (a crash). The first batch is one page,
// so the second starts on a page boundary.
func gapLog(t *testing.T, fs FS, dir string) ([]Batch, Options) {
	t.Helper()
	return gapLogOf(t, Options{FS: fs, SegmentBytes: 1 << 20, IndexInterval: 4096, Logger: quietLogger}, dir)
}

// gapLogOf is gapLog with opts (SegmentBytes 12000 rolls after the third
// batch, sealing the first segment).
func gapLogOf(t *testing.T, opts Options, dir string) ([]Batch, Options) {
	t.Helper()
	fs := opts.FS
	l := mustOpen(t, dir, opts)
	bs := []Batch{sizedBatch(t, 0, 4096)}
	for i := 1; i < 6; i++ {
		bs = append(bs, sizedBatch(t, byte(i), 3000))
	}
	for _, b := range bs {
		mustAppend(t, l, b, 1)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil {
		t.Fatal(err)
	}
	return bs, opts
}

// openGapLog opens dir logging into a buffer, and returns the log's batches,
// whether it reported the log torn, and what it logged.
func openGapLog(t *testing.T, dir string, opts Options) ([]Batch, bool, string) {
	t.Helper()
	var out bytes.Buffer
	opts.Logger = slog.New(slog.NewTextHandler(&out, nil))
	l, err := Open(ctx, dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer l.Close()
	return readAll(t, l, 0), l.TornAtOpen(), out.String()
}

func checkGapRecovery(t *testing.T, got []Batch, torn bool, logged string, want []Batch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("recovered %d batches, want the %d before the gap", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
	if !torn {
		t.Fatal("recovery cut batches after a gap but did not report the log torn")
	}
	if !strings.Contains(logged, "at a gap of zeros") {
		t.Fatalf("recovery did not log the cut at the gap; logged:\n%s", logged)
	}
}

// TestGapOfZerosInActiveSegment: a batch in the middle of the active
// segment reads as zeros (never written back) while later ones reached the
// disk. Recovery keeps the batches before it and says that it dropped data,
// where before it took the zeros for the end of the writes.
func TestGapOfZerosInActiveSegment(t *testing.T) {
	fs := NewMemFS()
	bs, opts := gapLog(t, fs, "/log")
	path := activeLogPath(t, fs)
	if err := fs.Corrupt(path, func(d []byte) []byte {
		copy(d[4096:], make([]byte, len(bs[1])))
		return d
	}); err != nil {
		t.Fatal(err)
	}
	got, torn, logged := openGapLog(t, "/log", opts)
	checkGapRecovery(t, got, torn, logged, bs[:1])
}

// holeLog is gapLog on the OS's file system with a hole punched where the
// second batch is (the test is skipped where holes cannot be punched).
func holeLog(t *testing.T) (string, []Batch, Options) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "log")
	bs, opts := gapLog(t, OSFS{}, dir)
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(paths) != 1 {
		t.Fatalf("segment files %v (%v), want one", paths, err)
	}
	punchHole(t, paths[0], 4096, 4096)
	return dir, bs, opts
}

// punchHole makes [off, off+n) of the file at path a hole (the test is
// skipped where holes cannot be punched).
func punchHole(t *testing.T, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, n)
	if errors.Is(err, syscall.EOPNOTSUPP) {
		t.Skipf("this file system cannot punch holes: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
}

// TestHoleInActiveSegment is the same gap as a hole in the file (on ext4
// with delayed allocation, a page never written back has no block), found
// through SEEK_DATA without reading the hole; also through a node's file
// system wrapper (the disk-operation tracker).
func TestHoleInActiveSegment(t *testing.T) {
	for _, wrap := range []bool{false, true} {
		dir, bs, opts := holeLog(t)
		if wrap {
			opts.FS = NewDiskOps(time.Now).FS(OSFS{})
		}
		got, torn, logged := openGapLog(t, dir, opts)
		checkGapRecovery(t, got, torn, logged, bs[:1])
		// Recovery truncated the data after the gap: after another crash
		// the next open finds a clean cut, not a gap.
		if err := os.Remove(filepath.Join(dir, cleanShutdownFile)); err != nil {
			t.Fatal(err)
		}
		if got, torn, _ := openGapLog(t, dir, opts); len(got) != 1 || torn {
			t.Fatalf("wrapped %v: reopened after the cut: %d batches, torn %v; want 1, false", wrap, len(got), torn)
		}
	}
}

// TestHoleInSealedSegment: a sealed segment with a hole and data after it
// is damage (a sealed segment was flushed whole), not zeros left by a lost
// truncation: Open refuses it with a *CorruptionError and leaves the file
// as it was, where before it cut the file at the hole.
func TestHoleInSealedSegment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	_, opts := gapLogOf(t, Options{FS: OSFS{}, SegmentBytes: 12000, IndexInterval: 4096, Logger: quietLogger}, dir)
	// Scan every segment.
	if err := os.Remove(filepath.Join(dir, recoveryPointFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(paths) != 2 {
		t.Fatalf("segment files %v (%v), want two", paths, err)
	}
	sealed := paths[0]
	before, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	punchHole(t, sealed, 4096, 4096)
	_, err = Open(ctx, dir, opts)
	var cerr *CorruptionError
	if !errors.As(err, &cerr) || cerr.File != sealed || cerr.Position != 4096 {
		t.Fatalf("Open: %v; want a *CorruptionError in %s at 4096", err, sealed)
	}
	after, err := os.ReadFile(sealed)
	if err != nil || len(after) != len(before) {
		t.Fatalf("the refused segment is %d bytes (%v), was %d", len(after), err, len(before))
	}
}
