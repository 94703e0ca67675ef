package segment

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"

	mmap "github.com/edsrzf/mmap-go"
	"golang.org/x/sys/unix"

	"paymentlog/internal/uring"
)

// FS is the file-system interface all file access goes through, so that tests
// can inject failed fsyncs, short writes, ENOSPC and crashes that keep only
// synced bytes (see MemFS). A nil FS in Options means OSFS.
type FS interface {
	// OpenFile opens a file like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes a file; the directory entry is durable after SyncDir.
	Remove(name string) error
	// Rename renames a file atomically; durable after SyncDir.
	Rename(oldname, newname string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(dir string, perm os.FileMode) error
	// ReadDir lists the names of the files in dir, sorted.
	ReadDir(dir string) ([]string, error)
	// SyncDir makes dir's entries (creations, removals, renames) durable.
	SyncDir(dir string) error
}

// File is an open file.
type File interface {
	ReadAt(p []byte, off int64) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	// Size returns the current file size.
	Size() (int64, error)
	// Truncate changes the file size; growing makes a sparse hole of zeros.
	Truncate(size int64) error
	// Allocate reserves disk blocks for [off, off+n) without changing the
	// size, so that later writes through a mapping cannot fail for lack of space.
	Allocate(off, n int64) error
	// Sync makes the file's data and size durable (fdatasync).
	Sync() error
	// Map maps the first size bytes of the file (size <= Size()).
	Map(size int, writable bool) (Mapping, error)
	Close() error
}

// Mapping is a memory mapping of a file.
type Mapping interface {
	// Bytes returns the mapped memory.
	Bytes() []byte
	// Flush makes [off, off+n) durable (msync on the covering pages).
	Flush(off, n int) error
	// Unmap releases the mapping; Bytes must not be used afterwards.
	Unmap() error
}

// OSFS is the operating system's file system.
type OSFS struct{}

var _ FS = OSFS{}

func (OSFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &osFile{f: f}, nil
}

func (OSFS) Remove(name string) error                    { return os.Remove(name) }
func (OSFS) Rename(oldname, newname string) error        { return os.Rename(oldname, newname) }
func (OSFS) MkdirAll(dir string, perm os.FileMode) error { return os.MkdirAll(dir, perm) }

func (OSFS) ReadDir(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names, nil
}

func (OSFS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = syncDir(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir fsyncs directory d through the process's io_uring, as
// osFile.Sync does, else, or when the ring cannot take it, with the
// system call.
func syncDir(d *os.File) error {
	if r := flushRing(); r != nil {
		if err := r.FsyncAll(d); !errors.Is(err, uring.ErrNotSubmitted) {
			return err
		}
	}
	return d.Sync()
}

type osFile struct {
	f           *os.File
	noFallocate bool
}

func (f *osFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }
func (f *osFile) WriteAt(p []byte, off int64) (int, error) {
	var n int
	var err error
	if rawWrites {
		n, err = pwriteRaw(f.f, p, off) // writes nothing for an empty p
	} else {
		n, err = f.f.WriteAt(p, off)
	}
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}
func (f *osFile) Truncate(size int64) error { return f.f.Truncate(size) }

// DropCache asks the kernel to drop the clean page cache of [off, off+n):
// through the process's io_uring where flushes use it (flushring.go), else,
// or when the ring refuses, with the system call.
func (f *osFile) DropCache(off, n int64) error {
	if r := flushRing(); r != nil && r.Fadvise(f.f, off, n, unix.FADV_DONTNEED) == nil {
		return nil
	}
	return unix.Fadvise(int(f.f.Fd()), off, n, unix.FADV_DONTNEED)
}

func (f *osFile) Close() error { return f.f.Close() }

func (f *osFile) Size() (int64, error) {
	fi, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// Sync is fdatasync of the whole file: through the process's io_uring
// where flushes use it (flushring.go), else, or when the ring cannot take
// it, the system call. The ring parks only the goroutine: a blocking
// fdatasync (1-3 ms for a recovery point's index files) woke sysmon and
// handed the thread's P to another thread.
func (f *osFile) Sync() error {
	if r := flushRing(); r != nil {
		if err := r.Fsync(f.f, 0, 0); !errors.Is(err, uring.ErrNotSubmitted) {
			return err
		}
	}
	for {
		err := unix.Fdatasync(int(f.f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.f.Name(), Err: err}
			}
			return nil
		}
	}
}

func (f *osFile) Allocate(off, n int64) error {
	if n <= 0 || f.noFallocate {
		return nil
	}
	for {
		err := unix.Fallocate(int(f.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch {
		case err == nil:
			return nil
		case err == syscall.EINTR:
			continue
		case err == syscall.EOPNOTSUPP || err == syscall.ENOSYS:
			// The file system cannot reserve blocks; writes go through the
			// mapping unreserved (a full disk would then fault).
			f.noFallocate = true
			return nil
		default:
			return &os.PathError{Op: "fallocate", Path: f.f.Name(), Err: err}
		}
	}
}

// DataEnd implements dataEnder with lseek(SEEK_HOLE).
func (f *osFile) DataEnd() (int64, error) { return seekRetry(int(f.f.Fd()), 0, unix.SEEK_HOLE) }

// dataEnder is implemented by files that can tell where their data ends:
// the first hole (a never-written range of a sparse file), or the size.
// Recovery does not read a mapping past it: on tmpfs a read fault on a
// hole allocates a page, and on a full tmpfs that is SIGBUS, where ext4
// maps the zero page. Appends write a segment from its start without gaps,
// so past the first hole there is normally nothing; data there is a gap
// left by a crash, which recovery finds with dataSeeker (gap.go).
type dataEnder interface {
	DataEnd() (int64, error)
}

// dataEnd returns where f's data ends, at most size.
func dataEnd(f File, size int64) int64 {
	if d, ok := f.(dataEnder); ok {
		if end, err := d.DataEnd(); err == nil && end >= 0 && end < size {
			return end
		}
	}
	return size
}

func (f *osFile) Map(size int, writable bool) (Mapping, error) {
	if size <= 0 {
		return nil, errors.New("segment: cannot map an empty file")
	}
	prot := mmap.RDONLY
	if writable {
		prot = mmap.RDWR
	}
	m, err := mmap.MapRegion(f.f, size, prot, 0, 0)
	if err != nil {
		return nil, &os.PathError{Op: "mmap", Path: f.f.Name(), Err: err}
	}
	// Segment access is mostly sequential.
	_ = unix.Madvise(m, unix.MADV_SEQUENTIAL)
	return &osMapping{m: m, name: f.f.Name(), f: f.f, ring: flushRing()}, nil
}

type osMapping struct {
	m    mmap.MMap
	name string
	f    *os.File    // the mapped file, for ring flushes
	ring *uring.Ring // nil: msync
}

var pageSize = os.Getpagesize()

func (m *osMapping) Bytes() []byte { return m.m }

func (m *osMapping) Flush(off, n int) error {
	if n <= 0 {
		return nil
	}
	start := off &^ (pageSize - 1)
	end := off + n
	if end > len(m.m) {
		end = len(m.m)
	}
	if m.ring != nil {
		// The same vfs_fsync_range as msync(MS_SYNC) runs for a shared
		// mapping, without holding this thread (flushring.go).
		err := m.ring.Fsync(m.f, int64(start), int64(end-start))
		if !errors.Is(err, uring.ErrNotSubmitted) {
			return err
		}
	}
	if err := unix.Msync(m.m[start:end], unix.MS_SYNC); err != nil {
		return &os.PathError{Op: "msync", Path: m.name, Err: err}
	}
	return nil
}

func (m *osMapping) Unmap() error { return m.m.Unmap() }

// DropPages drops this mapping's pages of [off, off+n) (page aligned):
// the next access faults them in again from the page cache or the file.
func (m *osMapping) DropPages(off, n int) error {
	if n <= 0 || off < 0 || off+n > len(m.m) {
		return nil
	}
	b := m.m[off : off+n]
	if m.ring != nil && m.ring.Madvise(b, unix.MADV_DONTNEED) == nil {
		return nil // see DropCache
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}

// isNoSpace reports whether err means the file system is full: a write
// refused for lack of space. A failed flush is never that, whatever errno it
// carries (see flushError).
func isNoSpace(err error) bool {
	var fe *flushError
	if errors.As(err, &fe) {
		return false
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// flushError is a failed fsync or msync. Some file systems (NFS, thin
// provisioning, ext4 without delayed-allocation reservations) report ENOSPC
// there when writeback finds no room: the written pages are then lost, so
// the log must fail like after any failed flush, not treat it as a full
// disk that a later retry gets past.
type flushError struct{ err error }

func (e *flushError) Error() string { return e.err.Error() }
func (e *flushError) Unwrap() error { return e.err }

func fsOrDefault(fs FS) FS {
	if fs == nil {
		return OSFS{}
	}
	return fs
}

func join(dir, name string) string { return filepath.Join(dir, name) }
