package segment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testClock is a clock the test moves by hand.
type testClock struct{ ns atomic.Int64 }

func newTestClock() *testClock {
	c := &testClock{}
	c.ns.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *testClock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// stallOps makes the operations of fs that match hang: blocked receives
// each one's path when it starts, and they all return once the caller
// calls release (again: a no-op; defer it, so that a failed test does not
// leave a Close waiting for a hung flush).
func stallOps(fs *MemFS, match func(op FaultOp, path string) bool) (blocked chan string, release func()) {
	blocked = make(chan string, 16)
	released := make(chan struct{})
	fs.SetFault(func(op FaultOp, path string) error {
		if match(op, path) {
			select {
			case blocked <- path:
			default:
			}
			<-released
		}
		return nil
	})
	var once sync.Once
	return blocked, func() { once.Do(func() { close(released) }) }
}

func waitBlocked(t *testing.T, blocked chan string) string {
	t.Helper()
	select {
	case p := <-blocked:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no operation started")
		return ""
	}
}

// TestDiskOpsOldestIsAStuckFlush: a log's group-commit flush hangs in
// msync. While it does, Oldest names it and its age by the tracker's
// clock; once it returns nothing is in flight, and Longest remembers it.
func TestDiskOpsOldestIsAStuckFlush(t *testing.T) {
	clock := newTestClock()
	ops := NewDiskOps(clock.now)
	mem := NewMemFS()
	l := mustOpen(t, "/p", Options{FS: ops.FS(mem), SegmentBytes: 1 << 20, Sync: SyncAlways})
	defer l.Close()
	mustAppend(t, l, testBatch(1, 3, 1000), 1)
	if op, age, ok := ops.Oldest(); ok {
		t.Fatalf("%v in flight for %v before any flush", op, age)
	}

	blocked, release := stallOps(mem, func(op FaultOp, path string) bool {
		return op == OpSync && strings.HasSuffix(path, ".log")
	})
	defer release()
	done := make(chan error, 1)
	go func() { done <- l.WaitDurable(ctx, 3) }()
	path := waitBlocked(t, blocked)
	clock.advance(3200 * time.Millisecond)
	op, age, ok := ops.Oldest()
	if !ok || op.Kind != "msync" || op.Path != path || age != 3200*time.Millisecond {
		t.Fatalf("Oldest = %v, %v, %v; want the msync of %s, 3.2s", op, age, ok, path)
	}
	if want := "msync of " + path; op.String() != want {
		t.Fatalf("String() = %q, want %q", op.String(), want)
	}

	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if op, age, ok := ops.Oldest(); ok {
		t.Fatalf("%v still in flight for %v after it returned", op, age)
	}
	longest, n := ops.Longest()
	if longest.Kind != "msync" || longest.Took != 3200*time.Millisecond || n == 0 {
		t.Fatalf("Longest = %+v after %d operations; want the 3.2s msync", longest, n)
	}
}

// TestDiskOpsTracksWhatCanStall: each operation that waits for the disk
// or a frozen file system shows in flight while it hangs, named by kind
// and path; reads do not.
func TestDiskOpsTracksWhatCanStall(t *testing.T) {
	cases := []struct {
		kind string
		op   FaultOp
		run  func(fs FS, f File) error
	}{
		{"fdatasync", OpSync, func(_ FS, f File) error { return f.Sync() }},
		{"msync", OpSync, func(_ FS, f File) error {
			m, err := f.Map(4, true)
			if err != nil {
				return err
			}
			defer m.Unmap()
			return m.Flush(0, 4)
		}},
		{"write", OpWrite, func(_ FS, f File) error { _, err := f.WriteAt([]byte("abcd"), 4); return err }},
		{"truncate", OpTruncate, func(_ FS, f File) error { return f.Truncate(2) }},
		{"fallocate", OpAllocate, func(_ FS, f File) error { return f.Allocate(0, 64) }},
		{"fsync dir", OpSyncDir, func(fs FS, _ File) error { return fs.SyncDir("/d") }},
		{"rename", OpRename, func(fs FS, _ File) error { return fs.Rename("/d/f", "/d/g") }},
		{"remove", OpRemove, func(fs FS, _ File) error { return fs.Remove("/d/f") }},
		{"create", OpOpen, func(fs FS, _ File) error {
			f, err := fs.OpenFile("/d/new", os.O_CREATE|os.O_RDWR, 0o644)
			if err == nil {
				f.Close()
			}
			return err
		}},
	}
	for _, tt := range cases {
		t.Run(tt.kind, func(t *testing.T) {
			clock := newTestClock()
			ops := NewDiskOps(clock.now)
			mem := NewMemFS()
			fs := ops.FS(mem)
			if err := fs.MkdirAll("/d", 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := fs.OpenFile("/d/f", os.O_CREATE|os.O_RDWR, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("1234"), 0); err != nil {
				t.Fatal(err)
			}
			blocked, release := stallOps(mem, func(op FaultOp, _ string) bool { return op == tt.op })
			defer release()
			done := make(chan error, 1)
			go func() { done <- tt.run(fs, f) }()
			path := waitBlocked(t, blocked)
			clock.advance(time.Second)
			op, age, ok := ops.Oldest()
			if !ok || op.Kind != tt.kind || op.Path != path || age != time.Second {
				t.Errorf("Oldest = %v, %v, %v; want %s of %s for 1s", op, age, ok, tt.kind, path)
			}
			release()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if op, _, ok := ops.Oldest(); ok {
				t.Fatalf("%v still in flight", op)
			}
		})
	}

	// Reads are not tracked.
	ops := NewDiskOps(nil)
	mem := NewMemFS()
	fs := ops.FS(mem)
	f, err := fs.OpenFile("/r", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("abcd"), 0); err != nil {
		t.Fatal(err)
	}
	_, before := ops.Longest()
	if _, err := f.ReadAt(make([]byte, 4), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir("/"); err != nil {
		t.Fatal(err)
	}
	if _, after := ops.Longest(); after != before {
		t.Fatalf("%d reads tracked", after-before)
	}
}

// TestDiskOpsOldestOfSeveral: with several operations in flight Oldest is
// the one that started first, and the next once it returns.
func TestDiskOpsOldestOfSeveral(t *testing.T) {
	clock := newTestClock()
	ops := NewDiskOps(clock.now)
	a := ops.begin("fdatasync", "/a")
	clock.advance(time.Second)
	b := ops.begin("write", "/b")
	clock.advance(time.Second)
	if op, age, _ := ops.Oldest(); op.Path != "/a" || age != 2*time.Second {
		t.Fatalf("Oldest = %v for %v; want /a for 2s", op, age)
	}
	ops.end(a)
	if op, age, _ := ops.Oldest(); op.Path != "/b" || age != time.Second {
		t.Fatalf("Oldest = %v for %v; want /b for 1s", op, age)
	}
	ops.end(b)
	if _, _, ok := ops.Oldest(); ok {
		t.Fatal("an operation still in flight")
	}
}

// TestDiskOpsFSKeepsWhatTheFSOffers: the wrapper still reports the
// wrapped FS's space, its files' data ends and page cache drops, and
// wrapping twice with the same tracker wraps once.
func TestDiskOpsFSKeepsWhatTheFSOffers(t *testing.T) {
	ops := NewDiskOps(nil)
	mem := NewMemFS()
	mem.SetCapacity(1 << 20)
	if sp, err := SpaceOf(ops.FS(mem), "/"); err != nil || sp.Total != 1<<20 {
		t.Fatalf("SpaceOf through the wrapper = %+v, %v; want the MemFS's capacity", sp, err)
	}
	if _, err := SpaceOf(ops.FS(NewMemFS()), "/"); !errors.Is(err, ErrSpaceUnknown) {
		t.Fatalf("SpaceOf of a wrapped MemFS without a capacity: %v, want ErrSpaceUnknown", err)
	}
	if fs := ops.FS(mem); ops.FS(fs) != fs {
		t.Fatal("wrapping an FS the tracker wraps already wrapped it again")
	}

	dir := t.TempDir()
	fs := ops.FS(nil) // the OS's
	f, err := fs.OpenFile(filepath.Join(dir, "sparse"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 4096), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 20); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(cacheDropper); !ok {
		t.Fatal("a wrapped OS file drops no page cache")
	}
	raw, err := OSFS{}.OpenFile(filepath.Join(dir, "sparse"), os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if got, want := dataEnd(f, 1<<20), dataEnd(raw, 1<<20); got != want {
		t.Fatalf("data end through the wrapper %d, of the file %d", got, want)
	}
	m, err := f.Map(1<<20, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	if _, ok := m.(pageDropper); !ok {
		t.Fatal("a wrapped OS mapping drops no pages")
	}
}

// TestDiskOpsConcurrent: operations from many goroutines all end up
// completed and none left in flight (run with -race).
func TestDiskOpsConcurrent(t *testing.T) {
	ops := NewDiskOps(nil)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				_ = ops.track("write", "/x", func() error { return nil })
				_, _, _ = ops.Oldest()
			}
		}()
	}
	wg.Wait()
	if op, _, ok := ops.Oldest(); ok {
		t.Fatalf("%v left in flight", op)
	}
	if _, n := ops.Longest(); n != 8000 {
		t.Fatalf("%d operations completed, want 8000", n)
	}
}

// BenchmarkDiskOpsTrack is the tracker's cost per tracked operation (an
// append's pwrite, a flush's msync): compare with the tens of µs of the
// operation itself.
func BenchmarkDiskOpsTrack(b *testing.B) {
	ops := NewDiskOps(nil)
	nop := func() error { return nil }
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = ops.track("write", "/x", nop)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				_ = ops.track("write", "/x", nop)
			}
		})
	})
}

// BenchmarkTrackedWriteAt: what tracking adds to a write of a tracked
// file (on a MemFS), allocations included.
func BenchmarkTrackedWriteAt(b *testing.B) {
	f, err := NewDiskOps(nil).FS(NewMemFS()).OpenFile("/p-0.log", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	p := make([]byte, 512)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := f.WriteAt(p, int64(i%64)*512); err != nil {
			b.Fatal(err)
		}
	}
}
