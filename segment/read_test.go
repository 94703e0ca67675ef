package segment

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReadLimitsAndErrors(t *testing.T) {
	l := mustOpen(t, "/log", Options{FS: NewMemFS(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16, InitialOffset: 10})
	defer l.Close()
	var sizes []int
	for i := 0; i < 10; i++ {
		b := testBatch(i, 3, int64(100*i))
		mustAppend(t, l, b, 1)
		sizes = append(sizes, len(b))
	}
	// 10 batches of 3 records: offsets 10..39.
	v, err := l.Read(14, 1, -1) // mid-batch, tiny maxBytes: one whole batch
	if err != nil || Batch(v.Data).BaseOffset() != 13 || len(v.Data) != sizes[1] || v.Next != 16 {
		t.Fatalf("Read(14,1): %v next=%d len=%d", err, v.Next, len(v.Data))
	}
	v.Release()
	v.Release() // idempotent
	v, _ = l.Read(10, sizes[0]+sizes[1]+sizes[2]-1, -1)
	if v.Next != 16 {
		t.Fatalf("maxBytes: next %d", v.Next)
	}
	v.Release()
	v, _ = l.Read(10, 1<<20, 20) // maxOffset 20 cuts inside the batch 19..21
	if v.Next != 19 {
		t.Fatalf("maxOffset: next %d", v.Next)
	}
	v.Release()
	v, _ = l.Read(19, 1<<20, 20) // the batch straddles maxOffset: nothing
	if len(v.Data) != 0 || v.Next != 19 {
		t.Fatalf("straddling maxOffset: %d bytes next %d", len(v.Data), v.Next)
	}
	v, _ = l.Read(40, 100, -1)
	if len(v.Data) != 0 || v.Next != 40 {
		t.Fatal("read at LEO not empty")
	}
	var oor *OffsetOutOfRangeError
	if _, err := l.Read(9, 100, -1); !errors.As(err, &oor) || !errors.Is(err, ErrOffsetOutOfRange) || oor.Start != 10 || oor.End != 40 {
		t.Fatalf("below start: %v", err)
	}
	if _, err := l.Read(41, 100, -1); !errors.As(err, &oor) {
		t.Fatalf("beyond end: %v", err)
	}
	// Timestamps: batch i holds 100i, 100i+1, 100i+2.
	for ts, want := range map[int64]int64{0: 10, 101: 14, 150: 16, 902: 39, 903: -1} {
		if got, err := l.OffsetForTimestamp(ts); err != nil || got != want {
			t.Fatalf("OffsetForTimestamp(%d) = %d, %v; want %d", ts, got, err, want)
		}
	}
}

func TestAppendVerbatimChecks(t *testing.T) {
	l := mustOpen(t, "/log", Options{FS: NewMemFS(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16})
	defer l.Close()
	mk := func(base int64, epoch int32) Batch {
		b := testBatch(int(base), 2, 0)
		b.SetBaseOffset(base)
		b.SetLeaderEpoch(epoch)
		return b
	}
	if _, err := l.AppendVerbatim(ctx, mk(5, 1)); !errors.Is(err, ErrNonContiguous) {
		t.Fatalf("gap at start: %v", err)
	}
	two := append(append([]byte(nil), mk(0, 1)...), mk(3, 1)...)
	if _, err := l.AppendVerbatim(ctx, two); !errors.Is(err, ErrNonContiguous) {
		t.Fatalf("gap between: %v", err)
	}
	bad := mk(0, 1)
	bad[len(bad)-1] ^= 4
	if _, err := l.AppendVerbatim(ctx, bad); !IsCorruption(err) {
		t.Fatalf("bad crc: %v", err)
	}
	ok := append(append([]byte(nil), mk(0, 1)...), mk(2, 3)...)
	info, err := l.AppendVerbatim(ctx, ok)
	if err != nil || info.BaseOffset != 0 || info.LastOffset != 3 {
		t.Fatalf("verbatim: %+v %v", info, err)
	}
	if e, o := l.EndOffsetForEpoch(1); e != 1 || o != 2 {
		t.Fatalf("EndOffsetForEpoch(1) = %d %d", e, o)
	}
	if e, o := l.EndOffsetForEpoch(3); e != 3 || o != 4 {
		t.Fatalf("EndOffsetForEpoch(3) = %d %d", e, o)
	}
	big := NewBuilder(BuilderOptions{})
	big.Add(0, nil, make([]byte, DefaultMaxBatchBytes), nil)
	if _, err := l.Append(ctx, big.Build(), 3); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("too large: %v", err)
	}
}

// TestGroupCommit: concurrent waiters are covered by fewer flushes than waiters.
func TestGroupCommit(t *testing.T) {
	fs := NewMemFS()
	var gate sync.Mutex
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSync && strings.HasSuffix(path, ".log") {
			gate.Lock() // hold every flush while more waiters pile up
			gate.Unlock()
		}
		return nil
	})
	l := mustOpen(t, "/log", Options{FS: fs, MaxIndexBytes: 1024, SegmentBytes: 1 << 16})
	defer l.Close()
	before := l.gc.flushCount()
	gate.Lock()
	var wg sync.WaitGroup
	const n = 32
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			info, err := l.Append(ctx, testBatch(i, 1, 0), 1)
			if err == nil {
				err = l.WaitDurable(ctx, info.LastOffset+1)
			}
			errs <- err
		}(i)
	}
	// Let the appends land, then release the flushes.
	deadline := time.Now().Add(10 * time.Second)
	for l.LogEndOffset() < n && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	gate.Unlock()
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if flushes := l.gc.flushCount() - before; flushes > 3 {
		t.Fatalf("%d flushes for %d waiters", flushes, n)
	}
}

func TestRetentionAndRollByAge(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { return now }
	l := mustOpen(t, "/log", Options{FS: NewMemFS(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16, RollAge: time.Minute,
		RetentionAge: time.Hour, Now: clock})
	defer l.Close()
	for i := 0; i < 3; i++ {
		mustAppend(t, l, testBatch(i, 1, now.UnixMilli()), 1)
		now = now.Add(2 * time.Minute) // each append rolls by age
	}
	if segs := l.Segments(); len(segs) != 3 {
		t.Fatalf("segments %v", segs)
	}
	now = now.Add(55 * time.Minute)
	if n, err := l.ApplyRetention(ctx); err != nil || n != 1 {
		t.Fatalf("retention deleted %d, %v", n, err)
	}
	if l.LogStartOffset() != 1 {
		t.Fatalf("log start %d", l.LogStartOffset())
	}
}

// TestSyncInterval: the background flusher makes appends durable without
// WaitDurable (which returns at once under this policy).
func TestSyncInterval(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/log", Options{FS: fs, MaxIndexBytes: 1024, SegmentBytes: 1 << 16,
		Sync: SyncInterval, SyncInterval: 5 * time.Millisecond})
	defer l.Close()
	info := mustAppend(t, l, testBatch(1, 3, 0), 1)
	if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := fs.CrashClone()
		l2, err := Open(ctx, "/log", Options{FS: c, MaxIndexBytes: 1024, SegmentBytes: 1 << 16, Logger: quietLogger})
		if err != nil {
			t.Fatal(err)
		}
		end := l2.LogEndOffset()
		l2.Close()
		if end == info.LastOffset+1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("interval flush never made offset %d durable", info.LastOffset)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRollByAgeAfterReopen: a non-empty active segment found at Open still
// rolls by age (counted from the open: when its first batch was written is
// not known), so that retention by age can delete its batches. Before, only
// a segment whose first batch was appended by this process could roll by
// age, and a low-traffic log whose node restarted more often than its
// segments filled up kept every batch for good.
func TestRollByAgeAfterReopen(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	clock := func() time.Time { return now }
	opts := Options{FS: NewMemFS(), MaxIndexBytes: 1024, SegmentBytes: 1 << 16, RollAge: time.Minute,
		RetentionAge: time.Hour, Now: clock, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	mustAppend(t, l, testBatch(0, 1, now.UnixMilli()), 1)
	for _, crash := range []bool{false, true} {
		if crash {
			l.crashForTest()
		} else if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, "/log", opts)
		segs := len(l.Segments())
		now = now.Add(2 * time.Minute)
		mustAppend(t, l, testBatch(1, 1, now.UnixMilli()), 1)
		if got := len(l.Segments()); got != segs+1 {
			t.Fatalf("crash=%v: %d segments after an append %v past RollAge, want %d", crash, got, 2*time.Minute, segs+1)
		}
	}
	now = now.Add(2 * time.Hour)
	if n, err := l.ApplyRetention(ctx); err != nil || n != 2 {
		t.Fatalf("retention deleted %d segments, %v; want 2", n, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
