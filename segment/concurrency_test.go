package segment

import (
	"bytes"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
)

// TestConcurrentLifetimes runs appenders, readers that hold views, truncation
// and retention at once on real mmap'd files. Readers check that every batch
// they get is CRC-valid and that a held view's bytes never change until it is
// released: no SIGBUS, no recycled bytes.
func TestConcurrentLifetimes(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 16 << 10, IndexInterval: 512, MaxIndexBytes: 4096,
		Sync: SyncNever, RetentionBytes: 64 << 10, Logger: quietLogger}
	l := mustOpen(t, dir, opts)
	defer l.Close()
	const appends = 800
	var wg sync.WaitGroup
	var done atomic.Bool
	errc := make(chan error, 16)
	report := func(err error) {
		select {
		case errc <- err:
		default:
		}
	}
	wg.Add(1)
	go func() { // appender
		defer wg.Done()
		defer done.Store(true)
		for i := 0; i < appends; i++ {
			if _, err := l.Append(ctx, testBatch(i, 1+i%7, int64(i)), int32(i/500)); err != nil {
				report(err)
				return
			}
		}
	}()
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func(seed int64) { // readers
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			var held []*View
			var copies [][]byte
			for !done.Load() {
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end <= start {
					continue
				}
				v, err := l.Read(start+rng.Int63n(end-start), 1+rng.Intn(8192), -1)
				if err != nil {
					continue // raced with retention or truncation
				}
				if _, err := SplitBatches(v.Data, nil); err != nil {
					report(err)
					v.Release()
					return
				}
				held = append(held, v)
				copies = append(copies, append([]byte(nil), v.Data...))
				if len(held) > 8 {
					for i, h := range held {
						if !bytes.Equal(h.Data, copies[i]) {
							report(errChanged)
						}
						h.Release()
					}
					held, copies = held[:0], copies[:0]
				}
			}
			for i, h := range held {
				if !bytes.Equal(h.Data, copies[i]) {
					report(errChanged)
				}
				h.Release()
			}
		}(int64(r))
	}
	wg.Add(1)
	go func() { // truncation and retention
		defer wg.Done()
		rng := rand.New(rand.NewSource(99))
		for !done.Load() {
			start, end := l.LogStartOffset(), l.LogEndOffset()
			switch rng.Intn(3) {
			case 0:
				if end > start {
					if _, err := l.TruncateTo(ctx, end-rng.Int63n(min(end-start, 50))); err != nil {
						report(err)
					}
				}
			case 1:
				if _, err := l.ApplyRetention(ctx); err != nil {
					report(err)
				}
			case 2:
				if end > start {
					if err := l.DeleteBefore(ctx, start+rng.Int63n(min(end-start, 20))); err != nil {
						report(err)
					}
				}
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
}

var errChanged = errorString("a held view's bytes changed")

type errorString string

func (e errorString) Error() string { return string(e) }

// TestViewSurvivesReopenAndTruncation: a View taken before Close stays valid
// until released (Log.Close), also when the directory is opened again and the
// new Log truncates and appends over the bytes the View shows. Truncating the
// file in place would change them under the reader (and a read past the cut
// before the file grows back would be a SIGBUS on a real file).
func TestViewSurvivesReopenAndTruncation(t *testing.T) {
	for _, osfs := range []bool{false, true} {
		var fs FS = NewMemFS()
		dir := "/log"
		if osfs {
			fs, dir = OSFS{}, t.TempDir()
		}
		opts := Options{FS: fs, SegmentBytes: 4096, Logger: quietLogger}
		l := mustOpen(t, dir, opts)
		for i := 0; i < 5; i++ {
			mustAppend(t, l, testBatch(i, 2, int64(i)), 1)
		}
		v, err := l.Read(4, 1<<20, -1)
		if err != nil {
			t.Fatal(err)
		}
		want := append([]byte(nil), v.Data...)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, dir, opts)
		if _, err := l.TruncateTo(ctx, 2); err != nil {
			t.Fatal(err)
		}
		mustAppend(t, l, testBatch(77, 5, 0), 2)
		if !bytes.Equal(v.Data, want) {
			t.Errorf("osfs=%v: a View held across Close changed after the reopened log truncated and appended", osfs)
		}
		v.Release()
		got := readAll(t, l, 0)
		if len(got) != 2 || got[1].BaseOffset() != 2 || got[1].RecordCount() != 5 {
			t.Errorf("osfs=%v: log after truncation and append has %d batches", osfs, len(got))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentClose: Close calls racing each other must not panic (closing
// the background goroutine's stop channel twice did); exactly one of them
// closes the log and the others return ErrClosed.
func TestConcurrentClose(t *testing.T) {
	const iterations, closers = 300, 8
	for i := 0; i < iterations; i++ {
		l := mustOpen(t, "/log", Options{FS: NewMemFS(), Sync: SyncNever, SegmentBytes: 4096, MaxIndexBytes: 1024})
		start := make(chan struct{})
		errs := make(chan error, closers)
		var wg sync.WaitGroup
		for g := 0; g < closers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				errs <- l.Close()
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		ok := 0
		for err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrClosed):
				t.Fatalf("iteration %d: Close: %v", i, err)
			}
		}
		if ok != 1 {
			t.Fatalf("iteration %d: %d Close calls succeeded, want 1", i, ok)
		}
	}
}
