package uring

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of m that are in memory (mincore).
func resident(t *testing.T, m []byte) int {
	t.Helper()
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatal(os.NewSyscallError("mincore", errno))
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestFadviseDropsCachedPages drops a whole file: ext4 here caches a
// 1 MiB write in large folios, and DONTNEED skips a folio that the range
// covers only in part.
func TestFadviseDropsCachedPages(t *testing.T) {
	r := newRing(t, 4)
	const size = 1 << 20
	f := tempFile(t, size)
	if err := f.Sync(); err != nil { // DONTNEED keeps dirty pages
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	pages := size / os.Getpagesize()
	if got := resident(t, m); got != pages {
		t.Skipf("%d of %d pages cached after the write; nothing to drop", got, pages)
	}
	if err := r.Fadvise(f, 0, size, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if got := resident(t, m); got != 0 {
		t.Fatalf("%d of %d pages still cached after FADV_DONTNEED", got, pages)
	}
}

func TestMadviseDropsTheMappingsPages(t *testing.T) {
	r := newRing(t, 4)
	const size = 64 << 10
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	for i := range m {
		m[i] = 7
	}
	half := size / 2
	if err := r.Madvise(m[half:], unix.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	// Private anonymous pages dropped read back as zeros; the rest keep
	// what was written.
	for i, b := range m {
		if want := byte(7 * btoi(i < half)); b != want {
			t.Fatalf("byte %d = %d after MADV_DONTNEED of the second half, want %d", i, b, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestAdviseReportsErrors(t *testing.T) {
	r := newRing(t, 4)
	m, err := unix.Mmap(-1, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	// An address that is not page aligned: the kernel's EINVAL.
	err = r.Madvise(m[1:], unix.MADV_DONTNEED)
	var se *os.SyscallError
	if !errors.As(err, &se) || se.Syscall != "madvise" || !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Madvise of an unaligned address: %v, want a madvise SyscallError wrapping EINVAL", err)
	}
	if err := r.Madvise(nil, unix.MADV_DONTNEED); !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("Madvise of nothing: %v, want ErrNotSubmitted", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	defer pw.Close()
	err = r.Fadvise(pw, 0, 4096, unix.FADV_DONTNEED) // a pipe: ESPIPE
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "fadvise" || !errors.Is(err, syscall.ESPIPE) {
		t.Fatalf("Fadvise of a pipe: %v, want a fadvise PathError wrapping ESPIPE", err)
	}
	f := tempFile(t, 4096)
	for _, c := range []struct{ off, n int64 }{{-1, 4096}, {0, 0}, {0, 1 << 32}} {
		if err := r.Fadvise(f, c.off, c.n, unix.FADV_DONTNEED); !errors.Is(err, ErrNotSubmitted) {
			t.Fatalf("Fadvise(%d, %d): %v, want ErrNotSubmitted", c.off, c.n, err)
		}
	}
	f.Close()
	if err := r.Fadvise(f, 0, 4096, unix.FADV_DONTNEED); !errors.Is(err, ErrNotSubmitted) {
		t.Fatalf("Fadvise of a closed file: %v, want ErrNotSubmitted", err)
	}
	// The ring still works afterwards.
	if err := r.Fsync(tempFile(t, 4096), 0, 0); err != nil {
		t.Fatal(err)
	}
}
