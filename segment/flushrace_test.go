package segment

import (
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
	for i := range 4 {
		mustAppend(t, l, testBatch(i, 1, 1000), 1)
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for i := 4; i < 8; i++ {
		mustAppend(t, l, testBatch(i, 1, 1000), 1)
	}
	var mu sync.Mutex
	armed := true
	blocked, release := make(chan struct{}), make(chan struct{})
	fs.SetFault(func(op FaultOp, path string) error {
		if op != OpSync || !strings.HasSuffix(path, ".log") {
			return nil
		}
		mu.Lock()
		hit := armed
		armed = false
		mu.Unlock()
		if hit {
			close(blocked)
			<-release
		}
		return nil
	})
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
