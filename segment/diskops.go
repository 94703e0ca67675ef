package segment

import (
	"errors"
	"os"
	"sync"
	"time"
)

// DiskOps tracks the disk operations in flight that can stall: those that
// wait for the device or for a frozen file system (fdatasync, msync, the
// fsync of a directory, writes, truncations, allocations, creations,
// renames and removals). Reads are not tracked: a page cache miss waits
// for the disk too, but a frozen file system still serves them, and a
// read that hangs on a dying disk is also a write that hangs.
//
// It answers one question, Oldest: how long has the oldest operation
// still in flight been running. A node steps aside once that exceeds its
// --disk-stall-timeout (node/diskstall.go), like CockroachDB's
// storage.max_sync_duration: a process whose disk hangs is not dead (it
// runs and heartbeats on) but cannot acknowledge an acks=all write.
//
// Operations are tracked by wrapping an FS (DiskOps.FS): a node wraps its
// partition logs' and its metadata log's file systems with one DiskOps, so
// every log, checkpoint and snapshot file of the node goes through it. The
// cost is per operation, never per record: two clock reads and two
// uncontended mutex sections (a map insert and delete) per append, flush
// or fsync, about 0.3 µs on this 2-core machine (BenchmarkDiskOpsTrack,
// serial or from both cores), against a pwrite or fsync of tens of µs or
// more.
//
// A DiskOps is safe for concurrent use. The zero value is not usable; use
// NewDiskOps.
type DiskOps struct {
	now func() time.Time
	mu  struct {
		sync.Mutex
		seq      uint64
		inflight map[uint64]DiskOp
		longest  DiskOp // the longest operation completed so far (Took set)
		slowest  DiskOp // the longest completed since the last TakeSlowest
		done     uint64 // operations completed
	}
}

// DiskOp is one tracked disk operation.
type DiskOp struct {
	Kind  string    // "fdatasync", "msync", "fsync dir", "write", "truncate", "fallocate", "create", "rename", "remove", "mkdir"
	Path  string    // the file or directory
	Start time.Time // when it began, by the DiskOps's clock
	Took  time.Duration
}

// String says what the operation is, e.g. "fdatasync of /data/p-0/00000000000000000000.log".
func (o DiskOp) String() string { return o.Kind + " of " + o.Path }

// NewDiskOps returns a tracker reading now (nil: time.Now).
func NewDiskOps(now func() time.Time) *DiskOps {
	if now == nil {
		now = time.Now
	}
	d := &DiskOps{now: now}
	d.mu.inflight = map[uint64]DiskOp{}
	return d
}

// Oldest returns the oldest operation still in flight and how long it has
// been running; false when none is.
func (d *DiskOps) Oldest() (DiskOp, time.Duration, bool) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var oldest DiskOp
	found := false
	for _, op := range d.mu.inflight {
		if !found || op.Start.Before(oldest.Start) {
			oldest, found = op, true
		}
	}
	if !found {
		return DiskOp{}, 0, false
	}
	return oldest, max(now.Sub(oldest.Start), 0), true
}

// Longest returns the longest operation completed so far (zero before
// any) and how many have completed.
func (d *DiskOps) Longest() (DiskOp, uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.longest, d.mu.done
}

// begin records an operation starting now and returns its id for end.
func (d *DiskOps) begin(kind, path string) uint64 {
	start := d.now()
	d.mu.Lock()
	d.mu.seq++
	id := d.mu.seq
	d.mu.inflight[id] = DiskOp{Kind: kind, Path: path, Start: start}
	d.mu.Unlock()
	return id
}

// end records that operation id has returned.
func (d *DiskOps) end(id uint64) {
	now := d.now()
	d.mu.Lock()
	op := d.mu.inflight[id]
	delete(d.mu.inflight, id)
	op.Took = now.Sub(op.Start)
	d.mu.done++
	if op.Took > d.mu.longest.Took {
		d.mu.longest = op
	}
	if op.Took > d.mu.slowest.Took {
		d.mu.slowest = op
	}
	d.mu.Unlock()
}

// TakeSlowest returns the longest operation completed since the last call
// (zero Took: none) and starts over: the stall detector's view of what
// returned between two of its looks.
func (d *DiskOps) TakeSlowest() DiskOp {
	d.mu.Lock()
	defer d.mu.Unlock()
	op := d.mu.slowest
	d.mu.slowest = DiskOp{}
	return op
}

// track runs fn as operation kind of path.
func (d *DiskOps) track(kind, path string, fn func() error) error {
	id := d.begin(kind, path)
	err := fn()
	d.end(id)
	return err
}

// FS returns fs (nil: the OS's) with its stalling operations tracked by d.
// The result still offers what fs offers beyond FS (SpaceReporter, and
// its files' and mappings' page cache drops and data ends). Wrapping an
// FS d already wraps returns it as it is.
func (d *DiskOps) FS(fs FS) FS {
	if t, ok := fs.(*trackedFS); ok && t.ops == d {
		return fs
	}
	return &trackedFS{fs: fsOrDefault(fs), ops: d}
}

// trackedFS is an FS whose stalling operations its DiskOps tracks.
type trackedFS struct {
	fs  FS
	ops *DiskOps
}

func (t *trackedFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	var f File
	open := func() error {
		var err error
		f, err = t.fs.OpenFile(name, flag, perm)
		return err
	}
	var err error
	if flag&(os.O_CREATE|os.O_TRUNC) != 0 { // may write the directory or the inode
		err = t.ops.track("create", name, open)
	} else {
		err = open()
	}
	if err != nil {
		return nil, err
	}
	return &trackedFile{File: f, name: name, ops: t.ops}, nil
}

func (t *trackedFS) Remove(name string) error {
	return t.ops.track("remove", name, func() error { return t.fs.Remove(name) })
}

func (t *trackedFS) Rename(oldname, newname string) error {
	return t.ops.track("rename", newname, func() error { return t.fs.Rename(oldname, newname) })
}

func (t *trackedFS) MkdirAll(dir string, perm os.FileMode) error {
	return t.ops.track("mkdir", dir, func() error { return t.fs.MkdirAll(dir, perm) })
}

func (t *trackedFS) ReadDir(dir string) ([]string, error) { return t.fs.ReadDir(dir) }

func (t *trackedFS) SyncDir(dir string) error {
	return t.ops.track("fsync dir", dir, func() error { return t.fs.SyncDir(dir) })
}

// Space implements SpaceReporter through the wrapped FS.
func (t *trackedFS) Space(dir string) (Space, error) { return SpaceOf(t.fs, dir) }

// trackedFile is a File whose stalling operations its DiskOps tracks.
type trackedFile struct {
	File
	name string
	ops  *DiskOps
}

func (f *trackedFile) WriteAt(p []byte, off int64) (int, error) {
	var n int
	err := f.ops.track("write", f.name, func() error {
		var err error
		n, err = f.File.WriteAt(p, off)
		return err
	})
	return n, err
}

func (f *trackedFile) Truncate(size int64) error {
	return f.ops.track("truncate", f.name, func() error { return f.File.Truncate(size) })
}

func (f *trackedFile) Allocate(off, n int64) error {
	return f.ops.track("fallocate", f.name, func() error { return f.File.Allocate(off, n) })
}

func (f *trackedFile) Sync() error {
	return f.ops.track("fdatasync", f.name, f.File.Sync)
}

func (f *trackedFile) Map(size int, writable bool) (Mapping, error) {
	m, err := f.File.Map(size, writable)
	if err != nil {
		return nil, err
	}
	return &trackedMapping{Mapping: m, name: f.name, ops: f.ops}, nil
}

// errNoDataEnd: the wrapped file cannot say where its data ends (dataEnd
// then takes its size, as for any such file).
var errNoDataEnd = errors.New("segment: data end unknown")

// DataEnd implements dataEnder through the wrapped file.
func (f *trackedFile) DataEnd() (int64, error) {
	if d, ok := f.File.(dataEnder); ok {
		return d.DataEnd()
	}
	return 0, errNoDataEnd
}

// DropCache implements cacheDropper through the wrapped file (a no-op
// where it has none, as a drop is).
func (f *trackedFile) DropCache(off, n int64) error {
	if c, ok := f.File.(cacheDropper); ok {
		return c.DropCache(off, n)
	}
	return nil
}

// trackedMapping is a Mapping whose flushes its DiskOps tracks.
type trackedMapping struct {
	Mapping
	name string
	ops  *DiskOps
}

func (m *trackedMapping) Flush(off, n int) error {
	if n <= 0 {
		return m.Mapping.Flush(off, n)
	}
	return m.ops.track("msync", m.name, func() error { return m.Mapping.Flush(off, n) })
}

// DropPages implements pageDropper through the wrapped mapping.
func (m *trackedMapping) DropPages(off, n int) error {
	if p, ok := m.Mapping.(pageDropper); ok {
		return p.DropPages(off, n)
	}
	return nil
}
