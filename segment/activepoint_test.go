package segment

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// pointOpts: a log that records an active recovery point every 16 KiB.
func pointOpts(fs FS) Options {
	return Options{FS: fs, SegmentBytes: 1 << 20, IndexInterval: 512, Sync: SyncAlways,
		ActivePointBytes: 16 << 10, Logger: quietLogger}
}

// appendDurable appends n batches of a few records (epoch changes every 7
// batches) and waits until they are durable.
func appendDurable(tb testing.TB, l *Log, from, n int) {
	tb.Helper()
	for i := from; i < from+n; i++ {
		info := mustAppend(tb, l, testBatch(i, 1+i%9, int64(1000+i)), int32(1+i/7))
		if err := l.WaitDurable(ctx, info.LastOffset+1); err != nil {
			tb.Fatal(err)
		}
	}
}

// waitPoint waits until no point write is running and returns the point on
// disk, which must be at or past pos.
func waitPoint(tb testing.TB, l *Log, pos int64) activePoint {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for l.point.running.Load() {
		if time.Now().After(deadline) {
			tb.Fatal("active recovery point write still running after 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	l.point.mu.Lock()
	p := l.point.onDisk
	l.point.mu.Unlock()
	if p.pos < pos {
		tb.Fatalf("no active recovery point at or past %d (have %+v)", pos, p)
	}
	return p
}

// appendUntilPoint appends durable batches (from seed from on) until the
// point on disk is at or past pos, and returns it and the next seed. A
// flush that finds the previous point write still running starts none (the
// next flush does), so on a loaded machine the point after a given number
// of appends is not known in advance.
func appendUntilPoint(tb testing.TB, l *Log, from int, pos int64) (activePoint, int) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if p := waitPoint(tb, l, 0); p.pos >= pos {
			return p, from
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no active recovery point at or past %d after 10 s of appends", pos)
		}
		appendDurable(tb, l, from, 1)
		from++
	}
}

// logState is what recovery rebuilds, for comparing two recoveries.
type logState struct {
	leo, start, maxTs, since int64
	epochs                   string
	idx, tidx                []byte
	batches                  []Batch
}

func stateOf(tb testing.TB, l *Log) logState {
	tb.Helper()
	l.mu.RLock()
	s := l.active()
	st := logState{leo: l.mu.leo, start: l.mu.logStart, maxTs: s.maxTs, since: s.sinceIndex,
		epochs: fmt.Sprint(l.mu.epochs.entries),
		idx:    append([]byte(nil), s.idx.data[:s.idx.n*offsetEntrySize]...),
		tidx:   append([]byte(nil), s.tidx.data[:s.tidx.n*timeEntrySize]...)}
	l.mu.RUnlock()
	st.batches = readAll(tb, l, st.start)
	return st
}

func sameState(tb testing.TB, got, want logState) {
	tb.Helper()
	switch {
	case got.leo != want.leo || got.start != want.start:
		tb.Fatalf("log [%d, %d), want [%d, %d)", got.start, got.leo, want.start, want.leo)
	case got.maxTs != want.maxTs || got.since != want.since:
		tb.Fatalf("maxTs %d sinceIndex %d, want %d %d", got.maxTs, got.since, want.maxTs, want.since)
	case got.epochs != want.epochs:
		tb.Fatalf("epochs %s, want %s", got.epochs, want.epochs)
	case !bytes.Equal(got.idx, want.idx) || !bytes.Equal(got.tidx, want.tidx):
		tb.Fatalf("index %d/%d bytes, want %d/%d (or contents differ)", len(got.idx), len(got.tidx), len(want.idx), len(want.tidx))
	case len(got.batches) != len(want.batches):
		tb.Fatalf("%d batches, want %d", len(got.batches), len(want.batches))
	}
	for i := range got.batches {
		if !bytes.Equal(got.batches[i], want.batches[i]) {
			tb.Fatalf("batch %d differs", i)
		}
	}
}

// crashed returns the durable state of fs after a power cut, and the same
// without the active recovery point (what recovery did before it existed).
func crashed(tb testing.TB, l *Log, fs *MemFS) (withPoint, without *MemFS) {
	tb.Helper()
	l.crashForTest()
	withPoint, without = fs.CrashClone(), fs.CrashClone()
	if err := without.Remove("/log/" + activePointFile); err != nil {
		tb.Fatalf("no point file: %v", err)
	}
	return withPoint, without
}

// Recovery from the active recovery point scans only the bytes after it and
// rebuilds exactly what a scan of the whole segment rebuilds: batches,
// index entries, time index, max timestamp, epochs; a torn tail after the
// point is cut as before.
func TestCrashResumesFromActivePoint(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/log", pointOpts(fs))
	appendDurable(t, l, 0, 400)
	p, n := appendUntilPoint(t, l, 400, 40<<10)
	appendDurable(t, l, n, 30) // durable, after the point
	size := l.Size()
	torn := testBatch(999, 5, 1)
	torn.SetBaseOffset(l.LogEndOffset())
	if _, err := l.active().file.f.WriteAt(torn[:len(torn)-3], size); err != nil {
		t.Fatal(err)
	}
	if err := l.active().file.f.Sync(); err != nil {
		t.Fatal(err)
	}
	withPoint, without := crashed(t, l, fs)

	opts := pointOpts(without)
	full := mustOpen(t, "/log", opts)
	if full.opened.resumedAt != -1 || full.opened.scanned != size {
		t.Fatalf("without a point: resumed at %d, scanned %d of %d", full.opened.resumedAt, full.opened.scanned, size)
	}
	want := stateOf(t, full)

	opts.FS = withPoint
	l = mustOpen(t, "/log", opts)
	if l.opened.resumedAt < p.pos || l.opened.scanned != size-l.opened.resumedAt {
		t.Fatalf("resumed at %d (point %d), scanned %d of %d", l.opened.resumedAt, p.pos, l.opened.scanned, size)
	}
	sameState(t, stateOf(t, l), want)
	// Both go on alike.
	appendDurable(t, l, n+30, 50)
	appendDurable(t, full, n+30, 50)
	sameState(t, stateOf(t, l), stateOf(t, full))
	l.Close()
	full.Close()
}

// A point that does not match its segment is not used: the whole segment
// is scanned and nothing is lost.
func TestActivePointMismatchScansAll(t *testing.T) {
	cases := map[string]func(fs *MemFS, p activePoint) error{
		"anchor crc": func(fs *MemFS, p activePoint) error {
			p.anchorCRC ^= 1
			return WriteCheckpoint(fs, "/log/"+activePointFile, p.encode())
		},
		"anchor leader epoch": func(fs *MemFS, p activePoint) error {
			p.anchorEpoch++ // the CRC does not cover it
			return WriteCheckpoint(fs, "/log/"+activePointFile, p.encode())
		},
		"anchor position": func(fs *MemFS, p activePoint) error {
			p.anchorPos++
			return WriteCheckpoint(fs, "/log/"+activePointFile, p.encode())
		},
		"index file short": func(fs *MemFS, p activePoint) error {
			return fs.Corrupt("/log/"+segmentName(0)+".index", func(b []byte) []byte { return b[:len(b)-offsetEntrySize] })
		},
		"index entry out of order": func(fs *MemFS, p activePoint) error {
			return fs.Corrupt("/log/"+segmentName(0)+".index", func(b []byte) []byte {
				copy(b[offsetEntrySize:], b[:offsetEntrySize])
				return b
			})
		},
		"garbage": func(fs *MemFS, p activePoint) error {
			return WriteCheckpoint(fs, "/log/"+activePointFile, []byte("0\n1 2\n"))
		},
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			fs := NewMemFS()
			l := mustOpen(t, "/log", pointOpts(fs))
			appendDurable(t, l, 0, 300)
			p, _ := appendUntilPoint(t, l, 300, 16<<10)
			withPoint, without := crashed(t, l, fs)
			want := stateOf(t, mustOpen(t, "/log", pointOpts(without)))
			if err := damage(withPoint, p); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, "/log", pointOpts(withPoint))
			defer l.Close()
			if l.opened.resumedAt != -1 {
				t.Fatalf("resumed at %d from a damaged point", l.opened.resumedAt)
			}
			sameState(t, stateOf(t, l), want)
		})
	}
}

// A truncation below the point removes it before cutting (durably), so
// that batches written after the cut are never taken for the old ones; a
// truncation above it keeps it.
func TestTruncationBelowActivePointRemovesIt(t *testing.T) {
	fs := NewMemFS()
	l := mustOpen(t, "/log", pointOpts(fs))
	appendDurable(t, l, 0, 300)
	p, _ := appendUntilPoint(t, l, 300, 16<<10)
	if _, err := l.TruncateTo(ctx, p.next); err != nil { // at the point: kept
		t.Fatal(err)
	}
	if _, err := fs.CrashClone().OpenFile("/log/"+activePointFile, os.O_RDONLY, 0); err != nil {
		t.Fatalf("a truncation at the point removed it: %v", err)
	}
	if _, err := l.TruncateTo(ctx, p.next-1); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.CrashClone().OpenFile("/log/"+activePointFile, os.O_RDONLY, 0); !os.IsNotExist(err) {
		t.Fatalf("after a truncation below the point, its file is still durable (err %v)", err)
	}
	appendDurable(t, l, 1000, 200) // other batches where the old ones were
	want := stateOf(t, l)
	l.crashForTest()
	l = mustOpen(t, "/log", pointOpts(fs.CrashClone()))
	defer l.Close()
	sameState(t, stateOf(t, l), want)
}

// appendAt appends b (3 records) at base with epoch, durably when sync
// (one flush, so one point write, for what was appended since the last).
func appendAt(tb testing.TB, l *Log, b Batch, base int64, epoch int32, sync bool) {
	tb.Helper()
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(epoch)
	if _, err := l.AppendVerbatim(ctx, b); err != nil {
		tb.Fatal(err)
	}
	if sync {
		if err := l.WaitDurable(ctx, base+3); err != nil {
			tb.Fatal(err)
		}
	}
}

// powerCutAtPointWrite takes a power-cut image of fs as the next point
// write begins (its first index write), once armed.
type powerCutAtPointWrite struct {
	mu     sync.Mutex
	armed  bool
	image  *MemFS
	target *MemFS
}

// before is called by fs's fault hook before each operation.
func (c *powerCutAtPointWrite) before(op FaultOp, path string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if op == OpWrite && c.armed && strings.HasSuffix(path, ".index") {
		c.armed = false
		c.image = c.target.CrashClone()
	}
}

// rewriteAndCut writes, where y was (offset 3), a batch of the same size
// with other records and a later timestamp, then x again at offset 6 (a
// producer's retry copied from a new leader, its CRC the same), and
// returns the image taken as the point write after them begins.
func (c *powerCutAtPointWrite) rewriteAndCut(tb testing.TB, l *Log, x Batch, epoch int32) *MemFS {
	tb.Helper()
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
	appendAt(tb, l, testBatch(4, 3, 9000), 3, epoch, false)
	appendAt(tb, l, x, 6, epoch, true)
	waitPoint(tb, l, 0)
	l.crashForTest()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.image == nil {
		tb.Fatal("no point write after the batches")
	}
	return c.image
}

// sameWithoutPoint opens image as it is and without its active recovery
// point, and compares what the two recoveries rebuild; it returns where
// the first resumed its scan (-1: it did not).
func sameWithoutPoint(tb testing.TB, image *MemFS, opts Options) (int64, error) {
	tb.Helper()
	without := image.CrashClone()
	_ = without.Remove("/log/" + activePointFile)
	opts.FS = without
	full := mustOpen(tb, "/log", opts)
	want := stateOf(tb, full)
	full.Close()
	opts.FS = image
	l := mustOpen(tb, "/log", opts)
	defer l.Close()
	return l.opened.resumedAt, diffState(stateOf(tb, l), want)
}

// openPointEveryBatch opens a log on a MemFS that indexes every batch and
// writes a point after every flush.
func openPointEveryBatch(tb testing.TB) (*MemFS, Options, *Log) {
	fs := NewMemFS()
	opts := pointOpts(fs)
	opts.ActivePointBytes, opts.IndexInterval = 1, 1
	return fs, opts, mustOpen(tb, "/log", opts)
}

// pointBatches are the stale-point tests' batches: a, then y (replaced
// after a truncation), then x.
func pointBatches() (a, y, x Batch) {
	return testBatch(1, 3, 100), testBatch(2, 3, 150), testBatch(3, 3, 200)
}

// A point write that fails after its rename (the directory fsync) may
// still leave the new point in the file, and a later directory fsync (the
// truncation's own recovery-point write) makes it durable. A truncation
// below that point must remove it like one it knows of: otherwise batches
// written after the cut, ending with a batch equal to the old anchor (a
// producer's retry copied from a new leader: the CRC does not cover the
// leader epoch), make Open trust the old point's index entries and max
// timestamp for other batches.
func TestFailedPointWriteStillRemovedBelowCut(t *testing.T) {
	fs, opts, l := openPointEveryBatch(t)
	a, y, x := pointBatches()
	if yy := testBatch(4, 3, 9000); len(y) != len(yy) { // rewriteAndCut's
		t.Fatalf("test batches of %d and %d bytes", len(y), len(yy))
	}
	cut := &powerCutAtPointWrite{target: fs}
	var mu sync.Mutex
	armed, renamed := false, false
	fs.SetFault(func(op FaultOp, path string) error {
		cut.before(op, path)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case op == OpRename && armed && path == "/log/"+activePointFile:
			renamed = true
		case op == OpSyncDir && renamed:
			renamed = false
			return errors.New("injected directory fsync failure")
		}
		return nil
	})
	appendAt(t, l, a, 0, 1, true)
	p := waitPoint(t, l, int64(len(a))) // a point at the end of a: known
	mu.Lock()
	armed = true
	mu.Unlock()
	appendAt(t, l, y, 3, 1, false)
	appendAt(t, l, x, 6, 1, true) // a point at its end: renamed, its directory fsync fails
	waitPoint(t, l, p.pos)
	// At the known point, below the other; the recovery-point write in the
	// truncation fsyncs the directory, making the other one durable.
	if _, err := l.TruncateTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// The power fails as the point write after y's replacement and x begins.
	image := cut.rewriteAndCut(t, l, x, 2)
	if resumed, err := sameWithoutPoint(t, image, opts); err != nil {
		t.Fatalf("resumed at %d: %v", resumed, err)
	}
}

// A point past the end Open recovered (a batch below it found damaged) is
// removed durably before anything is appended: a removal that a crash
// undid would bring it back over the batches written since, and a batch
// equal to its anchor at its anchor position would make the next Open
// trust its max timestamp and index entries for other batches.
func TestStalePointRemovedDurablyAtOpen(t *testing.T) {
	fs, opts, l := openPointEveryBatch(t)
	a, y, x := pointBatches()
	appendAt(t, l, a, 0, 1, true)
	waitPoint(t, l, int64(len(a)))
	appendAt(t, l, y, 3, 1, false)
	appendAt(t, l, x, 6, 1, true)
	p := waitPoint(t, l, int64(len(a)+len(y)+len(x)))
	l.crashForTest()
	// y rots on disk, and the leader-epoch checkpoint is lost, so Open
	// scans the whole segment (to rebuild the epochs) and cuts it before y.
	fs = fs.CrashClone()
	seg := "/log/" + segmentName(0)
	if err := fs.Corrupt(seg+".log", func(b []byte) []byte { b[len(a)+len(y)-1] ^= 0xff; return b }); err != nil {
		t.Fatal(err)
	}
	if err := fs.Remove("/log/" + epochFile); err != nil {
		t.Fatal(err)
	}
	if err := fs.SyncDir("/log"); err != nil {
		t.Fatal(err)
	}
	cut := &powerCutAtPointWrite{target: fs}
	fs.SetFault(func(op FaultOp, path string) error {
		cut.before(op, path)
		return nil
	})
	opts.FS = fs
	l = mustOpen(t, "/log", opts)
	if l.LogEndOffset() != 3 {
		t.Fatalf("recovered log end %d, want 3 (cut before the damaged batch)", l.LogEndOffset())
	}
	// The power fails as the point write after y's replacement and x begins.
	image := cut.rewriteAndCut(t, l, x, 1)
	if resumed, err := sameWithoutPoint(t, image, opts); err != nil {
		t.Fatalf("resumed at %d (the old point at %d): %v", resumed, p.pos, err)
	}
}
