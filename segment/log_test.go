package segment

import (
	"bytes"
	"errors"
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
