package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// --log-cleaner-io-max-bytes-per-second: a pass over a log of L bytes
// reads at least twice what it rewrites and writes its new segments twice
// over (written, then scanned back), so at R bytes per second, starting
// with a second's worth, it sleeps at least (2·before + 2·after − R) / R
// and at most (2·L + 2·after) / R, in steps on the broker's clock; the
// time is counted. A pass whose context ends while it sleeps stops
// quietly, losing nothing, and the next one does the work.
func TestCleanerThrottle(t *testing.T) {
	const rate = 4000
	var mu sync.Mutex
	now := time.UnixMilli(1_800_000_000_000)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	c := newTestCluster(t, clusterOptions{nodes: 1, segBytes: retentionSegBytes, cleanerInterval: -1, cleanerIO: rate, now: clock})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
	const n, keys = 60, 5
	for i := range n {
		if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, rec(fmt.Sprint("k", i%keys), fmt.Sprint(i, bigValue)))); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	b := c.node(1).b
	size := int64(b.Stats().LogSizeBytes)

	// A pass cancelled at its first sleep.
	ctx, cancel := context.WithCancel(context.Background())
	sleep := func(ctx context.Context, d time.Duration) error {
		cancel()
		return ctx.Err()
	}
	b.hooks.cleanerSleep.Store(&sleep)
	if s := b.CompactNow(ctx); s.Ran != 0 || s.Failed != 0 || s.Err != nil {
		t.Fatalf("cancelled pass: %+v", s)
	}
	if got := readAll(t, logOf(c, 1), n); len(got) != n {
		t.Fatalf("a cancelled pass left %d of %d records", len(got), n)
	}

	var slept time.Duration
	sleeps := 0
	sleep = func(ctx context.Context, d time.Duration) error {
		if d <= 0 || d > 2*time.Second {
			t.Errorf("sleep of %v", d)
		}
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
		slept += d
		sleeps++
		return ctx.Err()
	}
	b.hooks.cleanerSleep.Store(&sleep)
	st0 := b.Stats().CleanerThrottleTime
	s := b.CompactNow(context.Background())
	if s.Ran != 1 || s.Err != nil || s.RecordsRemoved == 0 {
		t.Fatalf("throttled pass: %+v", s)
	}
	lo := time.Duration(float64(2*s.BytesBefore+2*s.BytesAfter-rate) / rate * float64(time.Second))
	hi := time.Duration(float64(2*size+2*s.BytesAfter) / rate * float64(time.Second))
	if slept < lo || slept > hi || sleeps < 2 {
		t.Fatalf("slept %v in %d sleeps; want %v to %v (log %d bytes, %d rewritten into %d)", slept, sleeps, lo, hi, size, s.BytesBefore, s.BytesAfter)
	}
	if got := b.Stats().CleanerThrottleTime - st0; got != slept {
		t.Fatalf("throttle time counted %v, slept %v", got, slept)
	}
	if got := readAll(t, logOf(c, 1), n); len(got) >= n {
		t.Fatalf("%d records after the pass", len(got))
	}
}
