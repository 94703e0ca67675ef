package segment

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestFailedFsync: a failed flush fails the waiter and every later write;
// after a crash the log reopens with every batch acknowledged before it.
func TestFailedFsync(t *testing.T) {
	fs := NewMemFS()
	var reported atomic.Int32
	var reportedErr atomic.Value
	opts := Options{FS: fs, SegmentBytes: 4096, MaxIndexBytes: 1024, Logger: quietLogger,
		OnFailure: func(dir string, err error) {
			reported.Add(1)
			reportedErr.Store(dir + ": " + err.Error())
		}}
	l := mustOpen(t, "/log", opts)
	var acked []Batch
	for i := 0; i < 20; i++ {
		b := testBatch(i, 2, int64(i))
		info := mustAppend(t, l, b, 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	var failing atomic.Bool
	failing.Store(true)
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSync && failing.Load() {
			return syscall.EIO
		}
		return nil
	})
	info := mustAppend(t, l, testBatch(100, 2, 100), 1)
	err := l.WaitDurable(ctx, info.LastOffset+1)
	if !errors.Is(err, ErrLogFailed) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("WaitDurable after failed fsync: %v", err)
	}
	if _, err := l.Append(ctx, testBatch(101, 1, 1), 1); !errors.Is(err, ErrLogFailed) {
		t.Fatalf("Append after failure: %v", err)
	}
	if n, e := reported.Load(), reportedErr.Load(); n != 1 || !strings.Contains(e.(string), "/log: ") {
		t.Fatalf("OnFailure called %d times (want once), last with %v", n, e)
	}
	failing.Store(false)
	_ = l.Close() // no clean marker after a failure
	fs.SetFault(nil)
	opts.FS = fs.CrashClone()
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	got := readAll(t, l, 0)
	if len(got) < len(acked) {
		t.Fatalf("recovered %d batches, %d were acknowledged", len(got), len(acked))
	}
	for i := range acked {
		if string(got[i]) != string(acked[i]) {
			t.Fatalf("acknowledged batch %d changed", i)
		}
	}
}

// TestDiskFull: appends fail with ErrDiskFull, nothing acknowledged is lost,
// the log reopens, and appends work again once there is room.
func TestDiskFull(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 8192, MaxIndexBytes: 1024, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	fs.SetCapacity(fs.Used() + 20000)
	var acked []Batch
	var fullErr error
	for i := 0; i < 1000; i++ {
		b := testBatch(i, 8, int64(i))
		info, err := l.Append(ctx, b, 1)
		if err != nil {
			fullErr = err
			break
		}
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	if !errors.Is(fullErr, ErrDiskFull) || !strings.Contains(fullErr.Error(), "disk full") {
		t.Fatalf("want ErrDiskFull, got %v", fullErr)
	}
	if len(acked) == 0 {
		t.Fatal("nothing fit")
	}
	// Reads still work; the error is not sticky.
	if got := readAll(t, l, 0); len(got) != len(acked) {
		t.Fatalf("read %d, acked %d", len(got), len(acked))
	}
	_ = l.Close()
	crashed := fs.CrashClone()
	crashed.SetCapacity(crashed.Used()) // still full
	opts.FS = crashed
	l = mustOpen(t, "/log", opts)
	if got := readAll(t, l, 0); len(got) != len(acked) {
		t.Fatalf("after reopen: %d batches, acked %d", len(got), len(acked))
	}
	crashed.SetCapacity(-1)
	info := mustAppend(t, l, testBatch(5000, 3, 1), 2)
	if info.BaseOffset != acked[len(acked)-1].LastOffset()+1 {
		t.Fatalf("append after room: %+v", info)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDiskFullAtNewEpoch: a leadership change on a full disk. The batch that
// opens the new epoch fits, but the epoch checkpoint recording it does not:
// the append is refused with ErrDiskFull and the log stays healthy (it used
// to fail the log, which stops a node). Neither readers nor recovery after
// a process crash see the refused batch, and with room again the epoch opens.
func TestDiskFullAtNewEpoch(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1 << 20, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	var acked []Batch
	for i := range 3 {
		b := testBatch(i, 4, int64(i))
		info := mustAppend(t, l, b, 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	leo := l.LogEndOffset()

	refused := testBatch(3, 4, 3)
	fs.SetCapacity(fs.Used() + int64(len(refused))) // room for the batch, none for the checkpoint
	_, err := l.Append(ctx, refused, 2)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append opening epoch 2 on a full disk: want ErrDiskFull, got %v", err)
	}
	if err := l.Failed(); err != nil {
		t.Fatalf("a full disk failed the log: %v", err)
	}
	if got := l.LogEndOffset(); got != leo {
		t.Fatalf("log end %d after the refused append, want %d", got, leo)
	}
	if e := l.LatestEpoch(); e != 1 {
		t.Fatalf("latest epoch %d after the refused append, want 1", e)
	}
	checkBatches(t, readAll(t, l, 0), acked)

	// A process crash keeps the page cache: reopen the same files unclosed.
	l = mustOpen(t, "/log", opts)
	checkBatches(t, readAll(t, l, 0), acked)
	if e := l.LatestEpoch(); e != 1 {
		t.Fatalf("latest epoch %d after recovery, want 1", e)
	}

	fs.SetCapacity(-1)
	info := mustAppend(t, l, testBatch(4, 4, 4), 2)
	if info.BaseOffset != leo {
		t.Fatalf("epoch 2 opens at %d, want %d", info.BaseOffset, leo)
	}
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != leo {
		t.Fatalf("epoch 1 ends at (%d, %d), want (1, %d)", e, end, leo)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if e := l.LatestEpoch(); e != 2 {
		t.Fatalf("latest epoch %d after reopening, want 2", e)
	}
}

// TestDiskFullAtTruncation: a follower truncates its epoch-2 tail on a full
// disk. The truncation needs no room and succeeds, but the epoch checkpoint
// cannot be rewritten and still names epoch 2. It used to fail the log. Now
// appends are refused until the checkpoint is rewritten, and a clean close
// that cannot rewrite it leaves no clean marker, so the next open rebuilds
// the cache instead of trusting a file that would put epoch 2 over epoch-1
// records.
func TestDiskFullAtTruncation(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1 << 20, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	for i, epoch := range []int32{1, 1, 1, 2, 2} {
		info := mustAppend(t, l, testBatch(i, 2, int64(i)), epoch)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
	}
	_, end1 := l.EndOffsetForEpoch(1) // epoch 2 starts here
	// Full for the checkpoint: the truncation frees the tail's bytes, so a
	// capacity would not stay full.
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpWrite && strings.HasSuffix(path, epochFile+".tmp") {
			return syscall.ENOSPC
		}
		return nil
	})
	if leo, err := l.TruncateTo(ctx, end1); err != nil || leo != end1 {
		t.Fatalf("TruncateTo(%d) on a full disk = %d, %v", end1, leo, err)
	}
	if err := l.Failed(); err != nil {
		t.Fatalf("a full disk failed the log: %v", err)
	}
	// Records of the epoch the log now ends in (a follower copying them).
	if _, err := l.Append(ctx, testBatch(9, 2, 9), 1); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append while the epoch checkpoint is stale and the disk full: want ErrDiskFull, got %v", err)
	}
	if err := l.Close(); err == nil {
		t.Fatal("Close with a stale epoch checkpoint on a full disk reported success")
	}
	l = mustOpen(t, "/log", opts)
	if e := l.LatestEpoch(); e != 1 || l.LogEndOffset() != end1 {
		t.Fatalf("after reopening: latest epoch %d, log end %d; want 1, %d", e, l.LogEndOffset(), end1)
	}
	fs.SetFault(nil)
	mustAppend(t, l, testBatch(9, 2, 9), 1)
	checkEpochOneAfterCleanReopen(t, l, opts)
}

// TestRecoveryRewritesAStaleEpochCheckpoint: the epoch checkpoint names an
// epoch whose first batch a power cut lost (the checkpoint is fsynced when
// the epoch opens, the batch only when it is acknowledged). Recovery rebuilds
// the cache from the batches, and must rewrite the file as well: a later
// clean open trusts the file, which would put epoch 2 over the epoch-1
// records appended meanwhile.
func TestRecoveryRewritesAStaleEpochCheckpoint(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1 << 20, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	for i := range 3 {
		info := mustAppend(t, l, testBatch(i, 2, int64(i)), 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
	}
	leo := l.LogEndOffset()
	mustAppend(t, l, testBatch(3, 2, 3), 2) // never synced
	opts.FS = fs.CrashClone()
	l = mustOpen(t, "/log", opts)
	if l.LogEndOffset() != leo || l.LatestEpoch() != 1 {
		t.Fatalf("after the power cut: log end %d, latest epoch %d; want %d, 1", l.LogEndOffset(), l.LatestEpoch(), leo)
	}
	mustAppend(t, l, testBatch(4, 2, 4), 1) // a follower copying epoch-1 records
	checkEpochOneAfterCleanReopen(t, l, opts)
}

// checkEpochOneAfterCleanReopen closes l, opens it again (trusting its
// checkpoints) and checks that epoch 1 is the latest and runs to the log end.
func checkEpochOneAfterCleanReopen(t *testing.T, l *Log, opts Options) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	if e, end := l.EndOffsetForEpoch(1); e != 1 || end != l.LogEndOffset() || l.LatestEpoch() != 1 {
		t.Fatalf("after a clean reopen epoch 1 ends at (%d, %d), latest %d; want (1, %d), 1", e, end, l.LatestEpoch(), l.LogEndOffset())
	}
}

// checkBatches compares batches read back with the ones acknowledged.
func checkBatches(t *testing.T, got, want []Batch) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("read %d batches, want %d", len(got), len(want))
	}
	for i := range want {
		if string(got[i]) != string(want[i]) {
			t.Fatalf("batch %d differs", i)
		}
	}
}

// TestShortWriteCheckpoint: a short write leaves the old checkpoint intact.
func TestShortWriteCheckpoint(t *testing.T) {
	fs := NewMemFS()
	_ = fs.MkdirAll("/d", 0o755)
	if err := WriteCheckpoint(fs, "/d/ck", []byte("0\n42\n")); err != nil {
		t.Fatal(err)
	}
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpWrite {
			return io.ErrShortWrite
		}
		return nil
	})
	if err := WriteCheckpoint(fs, "/d/ck", []byte("0\n43\n")); err == nil {
		t.Fatal("short write not reported")
	}
	fs.SetFault(nil)
	off, ok, err := readOffsetCheckpoint(fs.CrashClone(), "/d/ck")
	if err != nil || !ok || off != 42 {
		t.Fatalf("checkpoint after short write: %d %v %v", off, ok, err)
	}
	if _, err := ReadCheckpoint(fs, "/d/missing"); !errors.Is(err, errNotExist()) {
		t.Fatalf("missing checkpoint: %v", err)
	}
}

// TestCrashSyncNever: with SyncNever a power cut may lose unflushed batches,
// but the log always reopens as a valid prefix.
func TestCrashSyncNever(t *testing.T) {
	for _, cutAfter := range []int{0, 5, 17, 40} {
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 2048, MaxIndexBytes: 1024, Sync: SyncNever, Logger: quietLogger}
		l := mustOpen(t, "/log", opts)
		var bs []Batch
		for i := 0; i < 40; i++ {
			b := testBatch(i, 3, int64(i))
			mustAppend(t, l, b, 1)
			bs = append(bs, append(Batch(nil), b...))
			if i+1 == cutAfter {
				if err := l.Sync(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		crashed := fs.CrashClone()
		l.crashForTest()
		opts.FS = crashed
		opts.TruncateOnCorruption = true // sealed segments may not be flushed yet
		l = mustOpen(t, "/log", opts)
		got := readAll(t, l, 0)
		if len(got) < cutAfter {
			t.Fatalf("synced %d batches, recovered %d", cutAfter, len(got))
		}
		for i := range got {
			if string(got[i]) != string(bs[i]) {
				t.Fatalf("batch %d differs", i)
			}
		}
		l.Close()
	}
}

// TestRecoveryPointWaitsForPendingSync: with SyncNever the background
// goroutine advances the recovery point over segments sealed without a
// flush once they are fsynced. A segment whose fsync another flush (Sync)
// has started but not finished is not durable yet: the recovery point must
// not pass it, or a power cut then would leave a segment that Open trusts
// without scanning it.
func TestRecoveryPointWaitsForPendingSync(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1024, MaxIndexBytes: 1024, Sync: SyncNever, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	// Block the fsync of the first two segments until released.
	logPathOf := func(l *Log, base int64) string { p, _, _ := l.segPaths(base); return p }
	type gate struct{ entered, release chan struct{} }
	gates := map[string]*gate{}
	var mu sync.Mutex
	gateFor := func(path string) *gate {
		mu.Lock()
		defer mu.Unlock()
		if g := gates[path]; g != nil {
			return g
		}
		g := &gate{make(chan struct{}), make(chan struct{})}
		gates[path] = g
		return g
	}
	fs.SetFault(func(op FaultOp, path string) error {
		if op != OpSync || filepath.Ext(path) != ".log" {
			return nil
		}
		segs := l.Segments()
		if len(segs) < 2 || path == logPathOf(l, segs[len(segs)-1]) {
			return nil // the active segment
		}
		g := gateFor(path)
		select {
		case <-g.entered:
		default:
			close(g.entered)
		}
		<-g.release
		return nil
	})
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	appendUntilSegments := func(n int) {
		t.Helper()
		for i := 0; len(l.Segments()) < n; i++ {
			if i > 1000 {
				t.Fatal("no roll")
			}
			mustAppend(t, l, testBatch(i, 3, int64(i)), 1)
		}
	}
	// Segment A is sealed; the background flush of it blocks.
	appendUntilSegments(2)
	segs := l.Segments()
	a, b := segs[0], segs[1]
	gA := gateFor(logPathOf(l, a))
	wait(gA.entered, "the background fsync of the first segment")
	// Segment B is sealed; a Sync picks it up and blocks in its fsync.
	appendUntilSegments(3)
	gB := gateFor(logPathOf(l, b))
	syncDone := make(chan error, 1)
	go func() { syncDone <- l.Sync(ctx) }()
	wait(gB.entered, "Sync's fsync of the second segment")
	// The background flush of A completes and sets the recovery point.
	close(gA.release)
	deadline := time.Now().Add(10 * time.Second)
	var rp int64
	for {
		off, ok, err := readOffsetCheckpoint(fs, "/log/"+recoveryPointFile)
		if err != nil {
			t.Fatal(err)
		}
		if ok && off > a {
			rp = off
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("recovery point never advanced past %d", a)
		}
		time.Sleep(time.Millisecond)
	}
	if rp > b {
		t.Errorf("recovery point %d passes segment %d whose fsync has not finished", rp, b)
	}
	close(gB.release)
	if err := <-syncDone; err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestRecoveryFlushesScannedSegments: Open advances the recovery point past
// every sealed segment it loads, so a sealed segment it had to scan (one
// sealed under SyncNever whose fsync never happened before the process died)
// must be flushed before that: a power cut right after the recovery must
// find the log the recovery found, not a trusted segment whose bytes never
// reached the disk.
func TestRecoveryFlushesScannedSegments(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1024, MaxIndexBytes: 1024, Sync: SyncNever, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	first, _, _ := l.segPaths(0)
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSync && path == first {
			return syscall.EIO // the background flush of the sealed segment fails
		}
		return nil
	})
	var bs []Batch
	for i := 0; len(l.Segments()) < 2; i++ {
		b := testBatch(i, 3, int64(i))
		mustAppend(t, l, b, 1)
		bs = append(bs, append(Batch(nil), b...))
	}
	l.crashForTest() // a process kill: the page cache keeps every batch
	fs.SetFault(nil)
	l = mustOpen(t, "/log", opts)
	checkBatches(t, readAll(t, l, 0), bs)
	// A power cut right after the recovery.
	opts.FS = fs.CrashClone()
	l.crashForTest()
	l, err := Open(ctx, "/log", opts)
	if err != nil {
		t.Fatalf("Open after a power cut following recovery: %v", err)
	}
	checkBatches(t, readAll(t, l, 0), bs)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReplaceEmptyActiveSyncDirFailure: when the directory fsync after
// replacing the empty active segment with a larger one fails, the segment it
// created is closed (file and mapping) before the empty one is put back.
func TestReplaceEmptyActiveSyncDirFailure(t *testing.T) {
	fs := NewMemFS()
	// segmentMaps is per process and keyed by path: a directory no other
	// test uses.
	l := mustOpen(t, "/replace-empty-syncdir", Options{FS: fs, SegmentBytes: 4096, MaxIndexBytes: 1024, Logger: quietLogger})
	logPath, _, _ := l.segPaths(0)
	if n := liveMappings(logPath); n != 1 {
		t.Fatalf("live mappings of %s after open: %d, want 1", logPath, n)
	}
	b := NewBuilder(BuilderOptions{})
	b.Add(1, []byte("k"), make([]byte, 8192), nil)
	big := b.Build()
	var failed atomic.Bool
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSyncDir && failed.CompareAndSwap(false, true) {
			return syscall.EIO
		}
		return nil
	})
	if _, err := l.Append(ctx, big, 1); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Append with a failing directory fsync: %v, want EIO", err)
	}
	if !failed.Load() {
		t.Fatal("the directory fsync was never attempted")
	}
	if n := liveMappings(logPath); n != 1 {
		t.Fatalf("live mappings of %s after the failed replace: %d, want 1", logPath, n)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if n := liveMappings(logPath); n != 0 {
		t.Fatalf("live mappings of %s after Close: %d, want 0 (a segment leaked)", logPath, n)
	}
}

// TestDiskFullAtRoll: an append that must roll a new segment finds the disk
// full. Sealing the old segment writes its index files and the roll
// rewrites the recovery point; neither may fail the log (a node whose disk
// filled would stop at its next roll): the append fails with ErrDiskFull,
// and once there is room the log rolls and goes on.
func TestDiskFullAtRoll(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 8192, IndexInterval: 64, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	var acked []Batch
	for i := 0; len(l.Segments()) == 1; i++ {
		b := testBatch(i, 4, int64(i))
		if len(acked) > 0 && l.Size()+int64(len(b)) > opts.SegmentBytes {
			break // the next append rolls
		}
		info := mustAppend(t, l, b, 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	if len(l.Segments()) != 1 {
		t.Fatalf("rolled early: %v", l.Segments())
	}
	fs.SetCapacity(fs.Used())
	_, err := l.Append(ctx, testBatch(len(acked), 4, 0), 1)
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("append that rolls on a full disk: want ErrDiskFull, got %v", err)
	}
	if err := l.Failed(); err != nil {
		t.Fatalf("a full disk at a roll failed the log: %v", err)
	}
	checkBatches(t, readAll(t, l, 0), acked)
	fs.SetCapacity(-1)
	for i := range 3 {
		b := testBatch(1000+i, 4, 0)
		info := mustAppend(t, l, b, 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	if len(l.Segments()) < 2 {
		t.Fatalf("no roll after room returned: %v", l.Segments())
	}
	checkBatches(t, readAll(t, l, 0), acked)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, "/log", opts)
	checkBatches(t, readAll(t, l, 0), acked)
}

// TestDiskFullAtRecoveryPoint: a roll seals the old segment, creates the
// new one, then raises the recovery point. If only that checkpoint finds
// the disk full, the roll has happened: the log must stay healthy (the
// recovery point on disk is lower, which only makes recovery scan more),
// and a crash then must recover every batch.
func TestDiskFullAtRecoveryPoint(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 8192, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpWrite && strings.Contains(path, recoveryPointFile) {
			return syscall.ENOSPC
		}
		return nil
	})
	var acked []Batch
	for i := 0; len(l.Segments()) < 3; i++ {
		b := testBatch(i, 4, int64(i))
		info := mustAppend(t, l, b, 1)
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, append(Batch(nil), b...))
	}
	if err := l.Failed(); err != nil {
		t.Fatalf("a full disk at the recovery point failed the log: %v", err)
	}
	fs.SetFault(nil)
	crashed := fs.CrashClone()
	opts.FS = crashed
	l = mustOpen(t, "/log", opts)
	checkBatches(t, readAll(t, l, 0), acked)
}

// TestENOSPCFromFsyncFailsTheLog: an fsync that reports ENOSPC (writeback
// found no room: NFS, thin provisioning) lost written pages. It is a failed
// flush, not a full disk that a retry gets past: the log fails.
func TestENOSPCFromFsyncFailsTheLog(t *testing.T) {
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 8192, IndexInterval: 64, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpSync && strings.HasSuffix(path, ".index") {
			return syscall.ENOSPC
		}
		return nil
	})
	var err error
	for i := 0; err == nil && i < 1000; i++ {
		_, err = l.Append(ctx, testBatch(i, 4, int64(i)), 1)
	}
	if !errors.Is(err, ErrLogFailed) || errors.Is(err, ErrDiskFull) {
		t.Fatalf("append after an fsync of the sealed index reported ENOSPC: %v, want ErrLogFailed", err)
	}
}

// TestOnDiskFull: every append refused for lack of space is reported to
// Options.OnDiskFull with the log's directory (a node holds back its
// heartbeats on it); other failures are not.
func TestOnDiskFull(t *testing.T) {
	fs := NewMemFS()
	var reports []string
	opts := Options{FS: fs, SegmentBytes: 1 << 20, Logger: quietLogger,
		OnDiskFull: func(dir string, err error) {
			if !errors.Is(err, ErrDiskFull) {
				t.Errorf("OnDiskFull with %v", err)
			}
			reports = append(reports, dir)
		}}
	l := mustOpen(t, "/log", opts)
	mustAppend(t, l, testBatch(0, 4, 0), 1)
	if _, err := l.Append(ctx, testBatch(1, 1, 0)[:10], 1); err == nil {
		t.Fatal("a malformed batch was taken")
	}
	fs.SetCapacity(fs.Used())
	if _, err := l.Append(ctx, testBatch(2, 4, 0), 1); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Append on a full disk: %v", err)
	}
	b := testBatch(3, 4, 0)
	b.SetBaseOffset(l.LogEndOffset())
	if _, err := l.AppendVerbatim(ctx, b); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("AppendVerbatim on a full disk: %v", err)
	}
	if !slices.Equal(reports, []string{"/log", "/log"}) {
		t.Fatalf("OnDiskFull reports %v, want two for /log", reports)
	}
}

// TestDataEndStopsAtTheFirstHole: recovery reads a segment's mapping only
// up to the first hole (on a full tmpfs, a read fault on a hole is
// SIGBUS; e2e TestDiskFullControllerTmpfs). The OS file finds it with
// SEEK_HOLE: a preallocated active segment with one batch has its data in
// the first block(s) only.
func TestDataEndStopsAtTheFirstHole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := OSFS{}.OpenFile(path, osCreate, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("batch"), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	end := dataEnd(f, 8<<20)
	if end < 5 || end >= 8<<20 {
		t.Fatalf("data of a sparse 8 MiB file with 5 bytes written ends at %d", end)
	}
	if got := dataEnd(NewMemFS().mustCreate(t, "/g"), 100); got != 100 {
		t.Fatalf("dataEnd without SEEK_HOLE: %d, want the size", got)
	}
}

func (fs *MemFS) mustCreate(t *testing.T, name string) File {
	f, err := fs.OpenFile(name, osCreate, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
