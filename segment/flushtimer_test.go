package segment

import (
	"context"
	"sync"
	"testing"
	"time"
)

// OnFlush is called once per group-commit flush that wrote bytes, with the
// bytes it covered and a duration, and not for a Sync with nothing new.
func TestOnFlushReportsEachFlush(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	var calls int
	var bytes int64
	var took time.Duration
	l := mustOpen(t, t.TempDir(), Options{Sync: SyncAlways, OnFlush: func(d time.Duration, n int64) {
		mu.Lock()
		calls, bytes, took = calls+1, bytes+n, took+d
		mu.Unlock()
	}})
	defer l.Close()
	var appended int64
	for i := range 3 {
		b := testBatch(i, 4, 1000)
		info := mustAppend(t, l, b, 1)
		appended += int64(len(b))
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(ctx); err != nil { // nothing new to flush
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 || bytes != appended || took <= 0 {
		t.Fatalf("OnFlush: %d calls, %d bytes, %v; want 3 calls, %d bytes, > 0", calls, bytes, took, appended)
	}
}
