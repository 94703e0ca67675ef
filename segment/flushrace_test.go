package segment

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFlushDuringTruncation: a flush of the active segment is running when
// the log is truncated below what it flushes, and batches are appended again
// over the cut. The old flush must not mark the new bytes as flushed: a later
// flush has to make them durable, so a crash after it keeps them.
func TestFlushDuringTruncation(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1 << 20, Sync: SyncAlways}
	l := mustOpen(t, "/p", opts)
	appendSyncedThenUnsynced(t, l)
	blocked, release := holdFirstLogSync(fs)
	flushed := make(chan error, 1)
	go func() { flushed <- l.Sync(ctx) }() // flushes offsets 4-7
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no flush")
	}
	if _, err := l.TruncateTo(ctx, 5); err != nil {
		t.Fatal(err)
	}
	close(release)
	// The flush's caller learns the log no longer reaches its offset.
	t.Logf("the interrupted flush returned %v", <-flushed)
	for i := 10; i < 13; i++ { // offsets 5-7 again, other bytes
		mustAppend(t, l, testBatch(i, 1, 1000), 2)
	}
	if err := l.WaitDurable(ctx, 8); err != nil {
		t.Fatal(err)
	}
	crashed := fs.CrashClone()
	l2 := mustOpen(t, "/p", Options{FS: crashed, SegmentBytes: 1 << 20})
	defer l2.Close()
	if got := l2.LogEndOffset(); got != 8 {
		t.Fatalf("after a crash the log ends at %d; WaitDurable(8) had returned", got)
	}
	want := readAll(t, l, 0)
	got := readAll(t, l2, 0)
	if len(got) != len(want) {
		t.Fatalf("%d batches after the crash, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("batch %d differs after the crash", i)
		}
	}
	l.Close()
}

// TestTruncationLowersDurableAtomically: a flush of offsets 4-7 finishes
// right after TruncateTo(5) has published the cut. It must not record the old
// end (8) as durable: WaitDurable(8) would then return for bytes the log no
// longer holds (a crash loses them), until the mark is lowered. The flush
// finishes inside TruncateTo's hook, before its file I/O, at the earliest
// moment after the cut is visible.
func TestTruncationLowersDurableAtomically(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", Options{FS: fs, SegmentBytes: 1 << 20, Sync: SyncAlways})
	defer l.Close()
	appendSyncedThenUnsynced(t, l)
	var once sync.Once
	blocked, release := make(chan struct{}), make(chan struct{})
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSync && strings.HasSuffix(path, ".log") {
			once.Do(func() {
				close(blocked)
				<-release
			})
		}
		return nil
	})
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	flushed := make(chan error, 1)
	go func() { flushed <- l.Sync(ctx) }() // flushes offsets 4-7
	wait(blocked, "the flush")

	var durableErr error
	hooked := false
	l.truncateHook = func() {
		hooked = true
		close(release)
		done := make(chan struct{})
		var flushErr error
		go func() { flushErr = <-flushed; close(done) }()
		wait(done, "the flush to finish")
		t.Logf("the flush returned %v", flushErr)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		durableErr = l.WaitDurable(wctx, 8)
	}
	if end, err := l.TruncateTo(ctx, 5); err != nil || end != 5 {
		t.Fatalf("TruncateTo(5) = %d, %v", end, err)
	}
	if !hooked {
		t.Fatal("TruncateTo never called its hook")
	}
	if durableErr == nil {
		t.Fatal("WaitDurable(8) returned nil right after the log was cut to 5")
	}
	if err := l.WaitDurable(ctx, 8); err == nil {
		t.Fatal("WaitDurable(8) returned nil after the log was cut to 5")
	}
}

// appendSyncedThenUnsynced appends batches 0-3 (offsets 0-3) and syncs
// them, then appends 4-7 without a sync.
func appendSyncedThenUnsynced(t *testing.T, l *Log) {
	t.Helper()
	for i := range 4 {
		mustAppend(t, l, testBatch(i, 1, 1000), 1)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 8; i++ {
		mustAppend(t, l, testBatch(i, 1, 1000), 1)
	}
}
