package segment

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWaitDurableHonoursContextWhileItsFlushIsStuck: a WaitDurable that
// started the flush itself returns ctx's error when ctx ends, although its
// fsync is still stuck (a produce must answer by its request timeout); it
// used to return only once the fsync did. The flush is not abandoned: a
// waiter queued behind it returns once it completes, and what it flushed
// counts as durable without another flush.
func TestWaitDurableHonoursContextWhileItsFlushIsStuck(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/p", Options{FS: fs, SegmentBytes: 1 << 20, Sync: SyncAlways})
	mustAppend(t, l, testBatch(1, 3, 1000), 1)
	blocked, release := holdFirstLogSync(fs)
	defer func() {
		select {
		case <-release:
		default:
			close(release) // a stuck flush would keep Close waiting
		}
	}()

	tctx, cancel := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { first <- l.WaitDurable(tctx, 3) }() // starts the flush
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no flush started")
	}
	cancel() // the request's deadline
	select {
	case err := <-first:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("WaitDurable returned %v; want its context's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitDurable still waits for its stuck flush after its context ended")
	}

	// Another waiter queues behind the stuck flush and is served by it.
	second := make(chan error, 1)
	go func() { second <- l.WaitDurable(ctx, 3) }()
	before := l.gc.flushCount()
	close(release)
	select {
	case err := <-second:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter behind the flush never returned")
	}
	if n := l.gc.flushCount() - before; n != 1 {
		t.Fatalf("%d flushes after the release; want only the stuck one, completed", n)
	}
	crashed := fs.CrashClone()
	l2 := mustOpen(t, "/p", Options{FS: crashed, SegmentBytes: 1 << 20})
	defer l2.Close()
	if got := l2.LogEndOffset(); got != 3 {
		t.Fatalf("after a crash the log ends at %d; the flush had completed", got)
	}
}
