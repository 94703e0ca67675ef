package segment

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"syscall"
	"testing"
)

// crashImages collects power-cut images of a MemFS taken before randomly
// chosen file-system operations (including those of a point write in
// flight, of Open, of a truncation), up to max of them. With failEvery > 0
// it also fails about one operation in failEvery while faults is set (an
// I/O error, or ENOSPC), the operation's effects not applied.
type crashImages struct {
	mu        sync.Mutex
	rng       *rand.Rand
	every     int // one operation in every, on average
	max       int
	failEvery int
	faults    bool
	failed    int
	images    []*MemFS
	ops       []string // the operation each image was taken before
}

// watch installs the capturing hook on fs.
func (c *crashImages) watch(fs *MemFS) {
	fs.SetFault(func(op FaultOp, path string) error {
		c.mu.Lock()
		take := len(c.images) < c.max && c.rng.Intn(c.every) == 0
		var fail error
		if c.faults && c.failEvery > 0 && c.rng.Intn(c.failEvery) == 0 {
			fail = errors.New("injected I/O error")
			if c.rng.Intn(2) == 0 {
				fail = syscall.ENOSPC
			}
			c.failed++
		}
		c.mu.Unlock()
		if take {
			img := fs.CrashClone()
			c.mu.Lock()
			c.images = append(c.images, img)
			c.ops = append(c.ops, fmt.Sprintf("%s %s", op, path))
			c.mu.Unlock()
		}
		return fail
	})
}

// setFaults turns the injected failures on or off.
func (c *crashImages) setFaults(on bool) {
	c.mu.Lock()
	c.faults = on
	c.mu.Unlock()
}

// TestActivePointCrashImages runs random workloads (appends with
// timestamps out of order and leader epochs, truncations into the active
// and into sealed segments, deletions, retention, full truncations,
// clean reopens, crashes, and reopens after a crash whose point no longer
// matches its index files so that Open scans all and rewrites them; half
// of the seeds also fail random file-system operations, a failed
// operation being followed by a crash), takes power-cut images before
// random file-system operations, and opens each image twice: as it is and
// without its active recovery point (a scan of the whole active segment,
// what recovery did before the point). Whatever the point lets Open skip
// must come out the same: batches, log start and end, leader epochs,
// index and time index entries, max timestamp.
func TestActivePointCrashImages(t *testing.T) {
	for seed := int64(1); seed <= 24; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			runPointCrashImages(t, seed, 250, seed%2 == 0)
		})
	}
}

func runPointCrashImages(t *testing.T, seed int64, steps int, faults bool) {
	rng := rand.New(rand.NewSource(seed))
	imgs := &crashImages{rng: rand.New(rand.NewSource(seed)), every: 12, max: 150}
	if faults {
		imgs.failEvery = 100
	}
	fs := NewMemFS()
	imgs.watch(fs)
	syncs := []SyncPolicy{SyncAlways, SyncInterval, SyncNever}
	opts := Options{FS: fs, SegmentBytes: 2048 + rng.Int63n(4096), IndexInterval: rng.Intn(300),
		MaxIndexBytes: 64 + rng.Intn(256), Sync: syncs[rng.Intn(len(syncs))],
		ActivePointBytes: 1 + rng.Int63n(1024), Logger: quietLogger}
	opts.TruncateOnCorruption = opts.Sync != SyncAlways // as node.go sets it
	l := mustOpen(t, "/log", opts)
	epoch := int32(0)
	// crash cuts the power and opens what survived; corrupt: the active
	// segment's index files no longer match the point, so that Open scans
	// all of it and truncates them.
	crash := func(corrupt bool) {
		segs := l.Segments()
		l.crashForTest()
		imgs.setFaults(false)
		fs = fs.CrashClone()
		if corrupt {
			idx := "/log/" + segmentName(segs[len(segs)-1]) + ".index"
			_ = fs.Corrupt(idx, func(b []byte) []byte { return b[:max(0, len(b)-offsetEntrySize)] })
		}
		imgs.watch(fs)
		opts.FS = fs
		l = mustOpen(t, "/log", opts)
	}
	for step := 0; step < steps; step++ {
		imgs.setFaults(true)
		var err error
		switch p := rng.Intn(100); {
		case p < 55:
			if rng.Intn(8) == 0 {
				epoch++
			}
			// Timestamps go back now and then (the time index keeps the
			// largest so far).
			b := testBatch(step, 1+rng.Intn(5), int64(1000+step*10-rng.Intn(40)))
			var info AppendInfo
			if rng.Intn(3) == 0 {
				b.SetBaseOffset(l.LogEndOffset())
				b.SetLeaderEpoch(epoch)
				info, err = l.AppendVerbatim(ctx, b)
			} else {
				info, err = l.Append(ctx, b, epoch)
			}
			if err == nil {
				err = l.WaitDurable(ctx, info.LastOffset+1)
			}
		case p < 70:
			if err = l.Sync(ctx); err == nil && rng.Intn(2) == 0 {
				waitPoint(t, l, 0)
			}
		case p < 80:
			start, end := l.LogStartOffset(), l.LogEndOffset()
			if end > start {
				_, err = l.TruncateTo(ctx, start+rng.Int63n(end-start))
			}
		case p < 83:
			start, end := l.LogStartOffset(), l.LogEndOffset()
			err = l.DeleteBefore(ctx, start+rng.Int63n(end-start+1))
		case p < 85:
			l.opts.RetentionBytes = rng.Int63n(8000)
			_, err = l.ApplyRetention(ctx)
			l.opts.RetentionBytes = -1
		case p < 86:
			err = l.TruncateFullyAndStartAt(ctx, max(0, l.LogEndOffset()+rng.Int63n(40)-10))
		case p < 90:
			if err = l.Close(); err == nil {
				imgs.setFaults(false)
				l = mustOpen(t, "/log", opts)
			}
		default:
			crash(rng.Intn(2) == 0)
		}
		if err != nil {
			if !faults {
				t.Fatalf("step %d: %v", step, err)
			}
			crash(false)
		}
	}
	l.crashForTest()
	fs.SetFault(nil)

	imgs.mu.Lock()
	images, ops, failed := imgs.images, imgs.ops, imgs.failed
	imgs.mu.Unlock()
	var withPoint, resumes int
	for i, img := range images {
		without := img.CrashClone()
		hasPoint := without.Remove("/log/"+activePointFile) == nil
		o := opts
		o.FS = without
		full, err := Open(ctx, "/log", o)
		if err != nil {
			t.Fatalf("image %d (before %s), without its point: Open: %v", i, ops[i], err)
		}
		want := stateOf(t, full)
		full.crashForTest()
		o.FS = img
		got, err := Open(ctx, "/log", o)
		if err != nil {
			t.Fatalf("image %d (before %s): Open: %v", i, ops[i], err)
		}
		gotState := stateOf(t, got)
		resumed := got.opened.resumedAt
		got.crashForTest()
		if hasPoint {
			withPoint++
		}
		if resumed >= 0 {
			resumes++
		}
		if err := diffState(gotState, want); err != nil {
			t.Fatalf("image %d (before %s; point file %v, resumed at %d): %v", i, ops[i], hasPoint, resumed, err)
		}
	}
	t.Logf("%d images, %d with a point file, %d resumed from it; %d failed operations", len(images), withPoint, resumes, failed)
}

// diffState is sameState as an error.
func diffState(got, want logState) error {
	switch {
	case got.leo != want.leo || got.start != want.start:
		return fmt.Errorf("log [%d, %d), want [%d, %d)", got.start, got.leo, want.start, want.leo)
	case got.maxTs != want.maxTs:
		return fmt.Errorf("maxTs %d, want %d", got.maxTs, want.maxTs)
	case got.epochs != want.epochs:
		return fmt.Errorf("epochs %s, want %s", got.epochs, want.epochs)
	case len(got.batches) != len(want.batches):
		return fmt.Errorf("%d batches, want %d", len(got.batches), len(want.batches))
	}
	for i := range got.batches {
		if string(got.batches[i]) != string(want.batches[i]) {
			return fmt.Errorf("batch %d differs", i)
		}
	}
	if string(got.idx) != string(want.idx) || string(got.tidx) != string(want.tidx) || got.since != want.since {
		return fmt.Errorf("index %d/%d bytes since %d, want %d/%d since %d (or contents differ)",
			len(got.idx), len(got.tidx), got.since, len(want.idx), len(want.tidx), want.since)
	}
	return nil
}
