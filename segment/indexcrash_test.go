package segment

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// indexDamage is what a crash can leave of a sealed segment's index file
// that was written but never fsynced: nothing, an empty file, a prefix cut
// at any byte, or the right size with the data blocks never written.
var indexDamage = []struct {
	name string
	fn   func(fs *MemFS, path string) error
}{
	{"missing", func(fs *MemFS, path string) error { return fs.Remove(path) }},
	{"empty", func(fs *MemFS, path string) error {
		return fs.Corrupt(path, func(d []byte) []byte { return d[:0] })
	}},
	{"one entry", func(fs *MemFS, path string) error {
		return fs.Corrupt(path, func(d []byte) []byte { return d[:min(len(d), timeEntrySize)] })
	}},
	{"cut mid-entry", func(fs *MemFS, path string) error {
		return fs.Corrupt(path, func(d []byte) []byte { return d[:max(0, len(d)-5)] })
	}},
	{"zeroed", func(fs *MemFS, path string) error {
		return fs.Corrupt(path, func(d []byte) []byte { clear(d); return d })
	}},
}

// TestCrashDamagedSealedIndex: a crash can lose or tear the .index and
// .timeindex of a sealed segment (SyncNever writes them without an fsync).
// In every sync mode, after a clean or an unclean shutdown, Open must accept
// the log and every read and timestamp lookup must give what it gave before:
// recovery rebuilds an index that fails its checks, and a short or empty one
// that passes them only makes lookups walk more batch headers.
func TestCrashDamagedSealedIndex(t *testing.T) {
	for _, mode := range []SyncPolicy{SyncAlways, SyncInterval, SyncNever} {
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 2048, IndexInterval: 200, MaxIndexBytes: 1024,
			Sync: mode, Logger: quietLogger}
		l := mustOpen(t, "/log", opts)
		var bs []Batch
		for i := range 60 {
			b := testBatch(i, 1+i%4, int64(10*i))
			mustAppend(t, l, b, 1)
			bs = append(bs, append(Batch(nil), b...))
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		base := fs.CrashClone()
		victim := middleSegment(t, base)
		stem := victim[:len(victim)-len(".log")]
		for _, clean := range []bool{true, false} {
			for _, which := range []string{".index", ".timeindex", "both"} {
				for _, d := range indexDamage {
					what := fmt.Sprintf("%v clean=%v %s %s", mode, clean, which, d.name)
					fs := base.CrashClone()
					if !clean {
						if err := fs.Remove("/log/" + cleanShutdownFile); err != nil {
							t.Fatal(err)
						}
					}
					for _, ext := range []string{".index", ".timeindex"} {
						if which == ext || which == "both" {
							if err := d.fn(fs, stem+ext); err != nil {
								t.Fatalf("%s: %v", what, err)
							}
						}
					}
					o := opts
					o.FS = fs
					checkReadsAfterIndexDamage(t, o, bs, what)
				}
			}
		}
	}
}

// checkReadsAfterIndexDamage opens the log and checks reads at every offset
// and timestamp lookups against the batches written.
func checkReadsAfterIndexDamage(t *testing.T, opts Options, bs []Batch, what string) {
	t.Helper()
	l, err := Open(ctx, "/log", opts)
	if err != nil {
		t.Fatalf("%s: Open: %v", what, err)
	}
	defer l.Close()
	for _, b := range bs {
		for off := b.BaseOffset(); off <= b.LastOffset(); off++ {
			v, err := l.Read(off, 1, -1)
			if err != nil {
				t.Fatalf("%s: Read(%d): %v", what, off, err)
			}
			if !bytes.Equal(v.Data, b) {
				t.Fatalf("%s: Read(%d) returned the wrong batch", what, off)
			}
			v.Release()
		}
	}
	for ts := int64(0); ts <= int64(10*len(bs)); ts += 7 {
		want := int64(-1)
	scan:
		for _, b := range bs {
			it := b.Iter()
			for it.Next() {
				if it.Record().Timestamp >= ts {
					want = it.Record().Offset
					break scan
				}
			}
		}
		if got, err := l.OffsetForTimestamp(ts); err != nil || got != want {
			t.Fatalf("%s: OffsetForTimestamp(%d) = %d, %v; want %d", what, ts, got, err, want)
		}
	}
}

// indexEntries returns the number of offset and time index entries of each
// segment.
func indexEntries(l *Log) [][2]int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out [][2]int
	for _, s := range l.mu.segs {
		out = append(out, [2]int{s.idx.n, s.tidx.n})
	}
	return out
}

// TestSyncNeverIndexDurable: under SyncNever a segment is sealed without an
// fsync and made durable later, before the recovery point passes it (or the
// clean-shutdown marker is written). Open then trusts its .index and
// .timeindex without a scan, so they must be durable too: a power cut used
// to leave them empty, and the segment unindexed for good (every read in it
// walking batch headers from its start).
func TestSyncNeverIndexDurable(t *testing.T) {
	for _, how := range []string{"clean close", "recovery point"} {
		fs := NewMemFS()
		opts := Options{FS: fs, SegmentBytes: 2048, IndexInterval: 200, MaxIndexBytes: 1024,
			Sync: SyncNever, Logger: quietLogger}
		l := mustOpen(t, "/log", opts)
		for i := 0; len(l.Segments()) < 4; i++ {
			mustAppend(t, l, testBatch(i, 1+i%4, int64(i)), 1)
		}
		want := indexEntries(l)
		segs := l.Segments()
		if want[0][0] == 0 {
			t.Fatalf("%s: the first segment has no index entries", how)
		}
		switch how {
		case "clean close":
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			opts.FS = fs.CrashClone()
		case "recovery point":
			// The background flush advances the recovery point to the
			// active segment.
			active := segs[len(segs)-1]
			deadline := time.Now().Add(10 * time.Second)
			for {
				off, ok, err := readOffsetCheckpoint(fs, "/log/"+recoveryPointFile)
				if err != nil {
					t.Fatal(err)
				}
				if ok && off == active {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the recovery point never reached %d", active)
				}
				time.Sleep(time.Millisecond)
			}
			opts.FS = fs.CrashClone()
			l.crashForTest()
		}
		l2 := mustOpen(t, "/log", opts)
		got := indexEntries(l2)
		for i := range segs[:len(segs)-1] {
			if got[i] != want[i] {
				t.Errorf("%s: after a power cut sealed segment %d has %v index entries, had %v", how, segs[i], got[i], want[i])
			}
		}
		l2.Close()
	}
}
