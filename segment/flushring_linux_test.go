package segment

import (
	"os"
	"path/filepath"
	"testing"

	"paymentlog/internal/uring"
)

// TestDurableFlushGoesThroughTheRing: on a kernel with io_uring, a
// SyncAlways log's group commit flushes through the shared ring (not
// msync), and what it flushed reads back after a reopen.
func TestDurableFlushGoesThroughTheRing(t *testing.T) {
	if os.Getenv(FlushEnv) == "msync" {
		t.Skip(FlushEnv + "=msync")
	}
	r := flushRing()
	if r == nil {
		_, err := uring.Shared()
		if b, rerr := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); rerr == nil && string(b) != "0\n" {
			t.Skipf("io_uring disabled here: %v", err)
		}
		t.Fatalf("no flush ring on a kernel that offers io_uring: %v", err)
	}
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{FS: OSFS{}, SegmentBytes: 1 << 20, Sync: SyncAlways, Logger: quietLogger})
	before := r.Submitted()
	mustAppend(t, l, testBatch(1, 3, 1000), 1)
	if err := l.WaitDurable(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if r.Submitted() == before {
		t.Fatal("WaitDurable flushed without the ring")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l2 := mustOpen(t, dir, Options{FS: OSFS{}, SegmentBytes: 1 << 20, Sync: SyncAlways, Logger: quietLogger})
	defer l2.Close()
	if got := l2.LogEndOffset(); got != 3 {
		t.Fatalf("log end %d after reopen, want 3", got)
	}
}

// TestMappingFlushFallsBackToMsync: a mapping whose ring is closed (or
// whose file the ring cannot reach) flushes with msync instead of failing.
func TestMappingFlushFallsBackToMsync(t *testing.T) {
	r, err := uring.New(4)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	r.Close()
	f, err := OSFS{}.OpenFile(t.TempDir()+"/seg.log", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 8192), 0); err != nil {
		t.Fatal(err)
	}
	m, err := f.Map(8192, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Unmap()
	om := m.(*osMapping)
	om.ring = r
	if err := om.Flush(100, 5000); err != nil {
		t.Fatalf("Flush with a closed ring: %v", err)
	}
}

// TestCheckpointSyncsGoThroughTheRing: a checkpoint's file fdatasync and its
// directory's fsync (what every recovery point and producer snapshot
// writes) are ring operations, and the checkpoint reads back.
func TestCheckpointSyncsGoThroughTheRing(t *testing.T) {
	if os.Getenv(FlushEnv) == "msync" {
		t.Skip(FlushEnv + "=msync")
	}
	r := flushRing()
	if r == nil {
		t.Skip("no flush ring here (TestDurableFlushGoesThroughTheRing says why)")
	}
	path := filepath.Join(t.TempDir(), "point")
	before := r.Submitted()
	if err := WriteCheckpoint(OSFS{}, path, []byte("0\n1 2 3\n")); err != nil {
		t.Fatal(err)
	}
	if got := r.Submitted() - before; got < 2 {
		t.Fatalf("%d ring operations for a checkpoint, want its file's and its directory's sync", got)
	}
	got, err := ReadCheckpoint(OSFS{}, path)
	if err != nil || string(got) != "0\n1 2 3\n" {
		t.Fatalf("read back %q, %v", got, err)
	}
}
