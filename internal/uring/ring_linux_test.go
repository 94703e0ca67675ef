package uring

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// newRing sets up a ring, skipping only where the kernel has io_uring
// turned off (the fallback is then what runs).
func newRing(t testing.TB, entries uint32) *Ring {
	t.Helper()
	r, err := New(entries)
	if err != nil {
		if b, rerr := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); rerr == nil && strings.TrimSpace(string(b)) != "0" {
			t.Skipf("io_uring disabled on this machine: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func tempFile(t testing.TB, size int) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(make([]byte, size)); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFsyncRanges(t *testing.T) {
	r := newRing(t, 8)
	f := tempFile(t, 1<<20)
	for _, c := range []struct{ off, n int64 }{{0, 1 << 20}, {4096, 8192}, {0, 0}, {1 << 19, -1}, {0, 1 << 40}} {
		if err := r.Fsync(f, c.off, c.n); err != nil {
			t.Fatalf("Fsync(%d, %d): %v", c.off, c.n, err)
		}
	}
	if got := r.Submitted(); got != 5 {
		t.Fatalf("submitted %d, want 5", got)
	}
}

func TestFsyncReportsTheKernelsError(t *testing.T) {
	r := newRing(t, 8)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	err = r.Fsync(pw, 0, 0) // fdatasync of a pipe: EINVAL
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "fdatasync" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("got %v, want an fdatasync PathError wrapping EINVAL", err)
	}
	// The ring still works afterwards.
	if err := r.Fsync(tempFile(t, 4096), 0, 0); err != nil {
		t.Fatal(err)
	}
}

func TestFsyncManyMoreThanTheRingHolds(t *testing.T) {
	r := newRing(t, 4)
	f := tempFile(t, 64<<10)
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.WriteAt([]byte{byte(i)}, int64(i*512)); err != nil {
				errs <- err
				return
			}
			errs <- r.Fsync(f, int64(i*512), 512)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := r.Submitted(); got != n {
		t.Fatalf("submitted %d, want %d", got, n)
	}
}

func TestClosedRingRefuses(t *testing.T) {
	r := newRing(t, 4)
	f := tempFile(t, 4096)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := r.Fsync(f, 0, 0); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("Fsync after Close: %v, want ErrClosed and ErrNotSubmitted", err)
	}
}

func TestFsyncOfAClosedFileIsNotSubmitted(t *testing.T) {
	r := newRing(t, 4)
	f := tempFile(t, 4096)
	f.Close()
	if err := r.Fsync(f, 0, 0); !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("Fsync of a closed file: %v, want ErrNotSubmitted", err)
	}
	if got := r.Submitted(); got != 0 {
		t.Fatalf("submitted %d", got)
	}
}

// BenchmarkFsync64K compares a ring's fsync of 64 KiB just written with the
// fdatasync system call (the same work in the kernel).
func BenchmarkFsync64K(b *testing.B) {
	buf := make([]byte, 64<<10)
	run := func(b *testing.B, sync func(f *os.File, off int64) error) {
		f := tempFile(b, 0)
		b.SetBytes(int64(len(buf)))
		for i := 0; b.Loop(); i++ {
			off := int64(i%1024) * int64(len(buf))
			if _, err := f.WriteAt(buf, off); err != nil {
				b.Fatal(err)
			}
			if err := sync(f, off); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("ring", func(b *testing.B) {
		r := newRing(b, 8)
		run(b, func(f *os.File, off int64) error { return r.Fsync(f, off, int64(len(buf))) })
	})
	b.Run("fdatasync", func(b *testing.B) {
		run(b, func(f *os.File, off int64) error { return unix.Fdatasync(int(f.Fd())) })
	})
}

func TestFsyncAllOfAFileAndADirectory(t *testing.T) {
	r := newRing(t, 4)
	f := tempFile(t, 4096)
	if err := r.FsyncAll(f); err != nil {
		t.Fatalf("FsyncAll of a file: %v", err)
	}
	d, err := os.Open(filepath.Dir(f.Name()))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := r.FsyncAll(d); err != nil {
		t.Fatalf("FsyncAll of a directory: %v", err)
	}
	if got := r.Submitted(); got != 2 {
		t.Fatalf("submitted %d, want 2", got)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	err = r.FsyncAll(pw) // fsync of a pipe: EINVAL
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "fsync" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("got %v, want an fsync PathError wrapping EINVAL", err)
	}
}
