package segment

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
)

// FaultOp names a file-system operation for fault injection.
type FaultOp string

// Operations a MemFS fault hook sees.
const (
	OpOpen     FaultOp = "open"
	OpWrite    FaultOp = "write"    // an injected error makes a short write of half the bytes
	OpSync     FaultOp = "sync"     // File.Sync and Mapping.Flush
	OpAllocate FaultOp = "allocate" // File.Allocate and growing Truncate
	OpTruncate FaultOp = "truncate"
	OpRemove   FaultOp = "remove"
	OpRename   FaultOp = "rename"
	OpSyncDir  FaultOp = "syncdir"
	OpMap      FaultOp = "map"
)

// MemFS is an in-memory FS for tests that tracks what is durable: file bytes
// become durable on File.Sync or Mapping.Flush, directory entries on SyncDir.
// CrashClone returns the state a machine would find after a power cut. A fault
// hook (SetFault) can fail any operation, and a capacity (SetCapacity) makes
// allocations fail with ENOSPC. Mappings alias the file's memory, like a
// MAP_SHARED mapping of the page cache.
type MemFS struct {
	mu struct {
		sync.Mutex
		files   map[string]*memFile // the namespace as processes see it
		durable map[string]*memFile // the namespace as of the last SyncDir of each directory
		dirs    map[string]bool
		fault   func(op FaultOp, path string) error
		capac   int64 // bytes that may be allocated; <0 unlimited
	}
}

type memFile struct {
	mu        sync.Mutex
	fs        *MemFS
	data      []byte // current contents; len is the size
	synced    []byte // durable contents
	allocated int64  // bytes accounted against the capacity
}

// NewMemFS returns an empty in-memory file system with unlimited capacity.
func NewMemFS() *MemFS {
	fs := &MemFS{}
	fs.mu.files = map[string]*memFile{}
	fs.mu.durable = map[string]*memFile{}
	fs.mu.dirs = map[string]bool{"/": true, ".": true}
	fs.mu.capac = -1
	return fs
}

// SetFault installs a hook called before every operation; a non-nil error
// fails it. Pass nil to remove the hook.
func (fs *MemFS) SetFault(fn func(op FaultOp, path string) error) {
	fs.mu.Lock()
	fs.mu.fault = fn
	fs.mu.Unlock()
}

// SetCapacity limits the total allocated bytes (ENOSPC beyond); <0 is unlimited.
func (fs *MemFS) SetCapacity(bytes int64) {
	fs.mu.Lock()
	fs.mu.capac = bytes
	fs.mu.Unlock()
}

// Used returns the bytes currently allocated.
func (fs *MemFS) Used() int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.usedLocked()
}

func (fs *MemFS) usedLocked() int64 {
	var n int64
	for _, f := range fs.mu.files {
		f.mu.Lock()
		n += f.allocated
		f.mu.Unlock()
	}
	return n
}

// CrashClone returns a new MemFS holding only what was durable: files whose
// directory entries were synced, with their synced bytes.
func (fs *MemFS) CrashClone() *MemFS {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	c := NewMemFS()
	for d := range fs.mu.dirs {
		c.mu.dirs[d] = true
	}
	for name, f := range fs.mu.durable {
		f.mu.Lock()
		nf := &memFile{fs: c, data: append([]byte(nil), f.synced...)}
		nf.synced = append([]byte(nil), f.synced...)
		nf.allocated = int64(len(nf.data))
		f.mu.Unlock()
		c.mu.files[name] = nf
		c.mu.durable[name] = nf
	}
	return c
}

// Corrupt lets a test modify a file's current and durable bytes directly.
func (fs *MemFS) Corrupt(name string, fn func(data []byte) []byte) error {
	fs.mu.Lock()
	f := fs.mu.files[filepath.Clean(name)]
	fs.mu.Unlock()
	if f == nil {
		return &os.PathError{Op: "corrupt", Path: name, Err: os.ErrNotExist}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = fn(f.data)
	f.synced = append(f.synced[:0], f.data...)
	return nil
}

func (fs *MemFS) check(op FaultOp, path string) error {
	fs.mu.Lock()
	fn := fs.mu.fault
	fs.mu.Unlock()
	if fn == nil {
		return nil
	}
	if err := fn(op, path); err != nil {
		return &os.PathError{Op: string(op), Path: path, Err: err}
	}
	return nil
}

func (fs *MemFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = filepath.Clean(name)
	if err := fs.check(OpOpen, name); err != nil {
		return nil, err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.mu.dirs[filepath.Dir(name)] {
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	}
	f := fs.mu.files[name]
	switch {
	case f == nil && flag&os.O_CREATE == 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrNotExist}
	case f != nil && flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, &os.PathError{Op: "open", Path: name, Err: os.ErrExist}
	case f == nil:
		f = &memFile{fs: fs}
		fs.mu.files[name] = f
	case flag&os.O_TRUNC != 0:
		f.mu.Lock()
		f.data = f.data[:0:0]
		f.allocated = 0
		f.mu.Unlock()
	}
	return &memHandle{f: f, name: name, fs: fs}, nil
}

func (fs *MemFS) Remove(name string) error {
	name = filepath.Clean(name)
	if err := fs.check(OpRemove, name); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.mu.files[name] == nil {
		return &os.PathError{Op: "remove", Path: name, Err: os.ErrNotExist}
	}
	delete(fs.mu.files, name)
	return nil
}

func (fs *MemFS) Rename(oldname, newname string) error {
	oldname, newname = filepath.Clean(oldname), filepath.Clean(newname)
	if err := fs.check(OpRename, newname); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f := fs.mu.files[oldname]
	if f == nil {
		return &os.PathError{Op: "rename", Path: oldname, Err: os.ErrNotExist}
	}
	delete(fs.mu.files, oldname)
	fs.mu.files[newname] = f
	return nil
}

func (fs *MemFS) MkdirAll(dir string, perm os.FileMode) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		fs.mu.dirs[d] = true
		if d == filepath.Dir(d) {
			break
		}
	}
	return nil
}

func (fs *MemFS) ReadDir(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.mu.dirs[dir] {
		return nil, &os.PathError{Op: "readdir", Path: dir, Err: os.ErrNotExist}
	}
	var names []string
	for name := range fs.mu.files {
		if filepath.Dir(name) == dir {
			names = append(names, filepath.Base(name))
		}
	}
	sort.Strings(names)
	return names, nil
}

func (fs *MemFS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	if err := fs.check(OpSyncDir, dir); err != nil {
		return err
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for name := range fs.mu.durable {
		if filepath.Dir(name) == dir {
			delete(fs.mu.durable, name)
		}
	}
	for name, f := range fs.mu.files {
		if filepath.Dir(name) == dir {
			fs.mu.durable[name] = f
		}
	}
	return nil
}

// String lists the files, for test failure messages.
func (fs *MemFS) String() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var b strings.Builder
	for name, f := range fs.mu.files {
		f.mu.Lock()
		fmt.Fprintf(&b, "%s size=%d synced=%d\n", name, len(f.data), len(f.synced))
		f.mu.Unlock()
	}
	return b.String()
}

type memHandle struct {
	fs     *MemFS
	f      *memFile
	name   string
	closed bool
}

var errMemClosed = errors.New("segment: memfs file closed")

func (h *memHandle) ReadAt(p []byte, off int64) (int, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if off >= int64(len(h.f.data)) {
		return 0, io.EOF
	}
	n := copy(p, h.f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (h *memHandle) WriteAt(p []byte, off int64) (int, error) {
	if err := h.fs.check(OpWrite, h.name); err != nil {
		n := len(p) / 2
		h.writeAt(p[:n], off)
		return n, err
	}
	if err := h.reserve(off + int64(len(p))); err != nil {
		return 0, err
	}
	h.writeAt(p, off)
	return len(p), nil
}

func (h *memHandle) reserve(end int64) error {
	// Used() locks every file, so compute it without holding our own lock.
	h.fs.mu.Lock()
	capac := h.fs.mu.capac
	h.fs.mu.Unlock()
	h.f.mu.Lock()
	cur := h.f.allocated
	h.f.mu.Unlock()
	if end <= cur {
		return nil
	}
	if capac >= 0 && h.fs.Used()+(end-cur) > capac {
		return &os.PathError{Op: "allocate", Path: h.name, Err: syscall.ENOSPC}
	}
	h.f.mu.Lock()
	if end > h.f.allocated {
		h.f.allocated = end
	}
	h.f.mu.Unlock()
	return nil
}

func (h *memHandle) writeAt(p []byte, off int64) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	end := off + int64(len(p))
	if end > int64(len(h.f.data)) {
		h.f.growLocked(end)
	}
	copy(h.f.data[off:], p)
}

// growLocked extends data to size with zeros, keeping the backing array when
// it is large enough (so that existing mappings keep aliasing it).
func (f *memFile) growLocked(size int64) {
	if size <= int64(cap(f.data)) {
		old := len(f.data)
		f.data = f.data[:size]
		clear(f.data[old:])
		return
	}
	nd := make([]byte, size)
	copy(nd, f.data)
	f.data = nd
}

func (h *memHandle) Size() (int64, error) {
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return int64(len(h.f.data)), nil
}

func (h *memHandle) Truncate(size int64) error {
	if err := h.fs.check(OpTruncate, h.name); err != nil {
		return err
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if size < int64(len(h.f.data)) {
		h.f.data = h.f.data[:size]
		if h.f.allocated > size {
			h.f.allocated = size
		}
		return nil
	}
	h.f.growLocked(size)
	return nil
}

func (h *memHandle) Allocate(off, n int64) error {
	if err := h.fs.check(OpAllocate, h.name); err != nil {
		return err
	}
	return h.reserve(off + n)
}

func (h *memHandle) Sync() error {
	if err := h.fs.check(OpSync, h.name); err != nil {
		return err
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	h.f.synced = append(h.f.synced[:0], h.f.data...)
	return nil
}

func (h *memHandle) Map(size int, writable bool) (Mapping, error) {
	if err := h.fs.check(OpMap, h.name); err != nil {
		return nil, err
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	if size <= 0 || size > len(h.f.data) {
		return nil, fmt.Errorf("segment: memfs: cannot map %d bytes of %s (size %d)", size, h.name, len(h.f.data))
	}
	return &memMapping{h: h, b: h.f.data[:size:size]}, nil
}

func (h *memHandle) Close() error {
	if h.closed {
		return errMemClosed
	}
	h.closed = true
	return nil
}

type memMapping struct {
	h *memHandle
	b []byte
}

func (m *memMapping) Bytes() []byte { return m.b }

func (m *memMapping) Flush(off, n int) error {
	if err := m.h.fs.check(OpSync, m.h.name); err != nil {
		return err
	}
	f := m.h.f
	f.mu.Lock()
	defer f.mu.Unlock()
	size := len(f.data)
	if len(f.synced) < size {
		f.synced = append(f.synced, make([]byte, size-len(f.synced))...)
	} else {
		f.synced = f.synced[:size]
	}
	end := off + n
	if end > size {
		end = size
	}
	if off < end {
		copy(f.synced[off:end], m.b[off:end])
	}
	return nil
}

func (m *memMapping) Unmap() error {
	m.b = nil
	return nil
}
