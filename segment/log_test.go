package segment

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestAppendReadReopen(t *testing.T) {
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			var fs FS = OSFS{}
			dir := t.TempDir()
			if fsName == "mem" {
				fs = NewMemFS()
				dir = "/data/p0"
			}
			opts := Options{FS: fs, SegmentBytes: 4096, IndexInterval: 256, MaxIndexBytes: 4096, InitialOffset: 1}
			l := mustOpen(t, dir, opts)
			var want []Batch
			for i := 0; i < 100; i++ {
				b := testBatch(i, 1+i%5, int64(1000+i))
				info := mustAppend(t, l, b, int32(1+i/30))
				if info.BaseOffset != b.BaseOffset() {
					t.Fatalf("info %+v vs batch base %d", info, b.BaseOffset())
				}
				want = append(want, append(Batch(nil), b...))
			}
			if got := l.LogStartOffset(); got != 1 {
				t.Fatalf("log start %d", got)
			}
			check := func(l *Log) {
				t.Helper()
				got := readAll(t, l, 1)
				if len(got) != len(want) {
					t.Fatalf("read %d batches, want %d", len(got), len(want))
				}
				for i := range got {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("batch %d differs", i)
					}
				}
				if len(l.Segments()) < 3 {
					t.Fatalf("expected several segments, got %v", l.Segments())
				}
				if e := l.LatestEpoch(); e != 4 {
					t.Fatalf("latest epoch %d", e)
				}
			}
			check(l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			l = mustOpen(t, dir, opts)
			check(l)
			l.crashForTest()
			l = mustOpen(t, dir, opts)
			check(l)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); !errors.Is(err, ErrClosed) {
				t.Fatalf("second close: %v", err)
			}
		})
	}
}

// TestAppendOffsetOverflow: after restarting the log near math.MaxInt64, a
// batch whose last offset (or the log end after it) would overflow is refused
// with ErrOffsetOverflow and nothing changes; a batch that fits still goes in.
func TestAppendOffsetOverflow(t *testing.T) {
	l := mustOpen(t, "/log", Options{FS: NewMemFS(), SegmentBytes: 4096, MaxIndexBytes: 1024})
	defer l.Close()
	start := int64(math.MaxInt64 - 2)
	if err := l.TruncateFullyAndStartAt(ctx, start); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, testBatch(1, 3, 1), 1); !errors.Is(err, ErrOffsetOverflow) {
		t.Fatalf("Append of 3 records at %d: %v, want ErrOffsetOverflow", start, err)
	}
	if leo := l.LogEndOffset(); leo != start {
		t.Fatalf("log end after the refused append: %d, want %d", leo, start)
	}
	fits := testBatch(2, 2, 1)
	info := mustAppend(t, l, fits, 1)
	if info.LastOffset != math.MaxInt64-1 || l.LogEndOffset() != math.MaxInt64 {
		t.Fatalf("last offset %d, log end %d", info.LastOffset, l.LogEndOffset())
	}
	if _, err := l.Append(ctx, testBatch(3, 1, 1), 1); !errors.Is(err, ErrOffsetOverflow) {
		t.Fatalf("Append at log end %d: %v, want ErrOffsetOverflow", int64(math.MaxInt64), err)
	}
	if leo := l.LogEndOffset(); leo != math.MaxInt64 {
		t.Fatalf("log end after the refused append: %d", leo)
	}
	// A follower's copy is held to the same rule.
	v := testBatch(4, 1, 1)
	v.SetBaseOffset(math.MaxInt64)
	if _, err := l.AppendVerbatim(ctx, v); !errors.Is(err, ErrOffsetOverflow) {
		t.Fatalf("AppendVerbatim at %d: %v, want ErrOffsetOverflow", int64(math.MaxInt64), err)
	}
	got := readAll(t, l, start)
	if len(got) != 1 || string(got[0]) != string(fits) {
		t.Fatalf("read back %d batches, want the one that fit", len(got))
	}
}
