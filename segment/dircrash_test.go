package segment

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"
	"testing"
)

// dirCrash is the state a crash can leave while a log removes or renames
// files: the durable file system at that moment, plus the directory
// operations not yet covered by a directory fsync. POSIX does not order
// directory operations before an fsync of the directory, so any subset of
// those may be durable. start is the log start offset readers could see
// at that moment.
type dirCrash struct {
	durable  *MemFS
	unsynced []dirOp
	start    int64
}

// dirOp is a removal (to == "") or a rename of a file.
type dirOp struct{ from, to string }

func (o dirOp) String() string {
	if o.to == "" {
		return "remove " + o.from
	}
	return "rename " + o.from + " " + o.to
}

// renamedFrom is the old name of a rename to newname: the log renames
// *.tmp over a file and a deleted segment's files to *.deleted.
func renamedFrom(newname string) string {
	if s, ok := strings.CutSuffix(newname, deletedSuffix); ok {
		return s
	}
	return newname + ".tmp"
}

// recordDirCrashes runs fn on l over fs and returns every state a crash
// could leave during it: before each removal, rename and directory sync,
// and at the end.
func recordDirCrashes(t *testing.T, fs *MemFS, l *Log, fn func()) []dirCrash {
	t.Helper()
	var states []dirCrash
	var unsynced []dirOp
	synced := false // a directory sync started; it completed once the next operation starts
	snapshot := func() {
		if synced {
			unsynced, synced = nil, false
		}
		states = append(states, dirCrash{fs.CrashClone(), append([]dirOp(nil), unsynced...), l.LogStartOffset()})
	}
	fs.SetFault(func(op FaultOp, path string) error {
		switch op {
		case OpRemove:
			snapshot()
			unsynced = append(unsynced, dirOp{from: path})
		case OpRename:
			snapshot()
			unsynced = append(unsynced, dirOp{from: renamedFrom(path), to: path})
		case OpSyncDir:
			snapshot()
			synced = true
		}
		return nil
	})
	fn()
	fs.SetFault(nil)
	snapshot()
	return states
}

// subsets returns the subsets of n unsynced operations a crash test
// tries, as bit masks: all of them up to 12 operations; beyond, every
// prefix and every operation missing (recovery treats each file on its
// own: a *.deleted file or an index without its .log is removed, and so
// is a segment wholly below the log-start checkpoint).
func subsets(n int) []uint64 {
	if n <= 12 {
		out := make([]uint64, 0, 1<<n)
		for mask := uint64(0); mask < 1<<n; mask++ {
			out = append(out, mask)
		}
		return out
	}
	all := uint64(1)<<n - 1
	var out []uint64
	for i := 0; i <= n; i++ {
		out = append(out, uint64(1)<<i-1)
	}
	for i := 0; i < n; i++ {
		out = append(out, all&^(1<<i))
	}
	return out
}

// each calls fn with every file system the crash state can come back as,
// skipping those seen (with the same start) before, when seen is not nil.
func (c dirCrash) each(t *testing.T, seen map[string]bool, fn func(fs *MemFS, what string)) {
	t.Helper()
	if len(c.unsynced) > 60 {
		t.Fatalf("%d unsynced directory operations: too many", len(c.unsynced))
	}
	for _, mask := range subsets(len(c.unsynced)) {
		fs := c.durable.CrashClone()
		var done []string
		for i, o := range c.unsynced {
			if mask&(1<<i) == 0 {
				continue
			}
			// Absent if created after the last directory sync.
			if o.to == "" {
				_ = fs.Remove(o.from)
			} else {
				_ = fs.Rename(o.from, o.to)
			}
			done = append(done, o.String())
		}
		if err := fs.SyncDir("/log"); err != nil {
			t.Fatal(err)
		}
		if seen != nil {
			key := fmt.Sprintf("%d %s", c.start, fs.fingerprint())
			if seen[key] {
				continue
			}
			seen[key] = true
		}
		fn(fs, fmt.Sprintf("durable directory operations %v", done))
	}
}

// fingerprint identifies the files of fs and their contents.
func (fs *MemFS) fingerprint() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	names := make([]string, 0, len(fs.mu.files))
	for name := range fs.mu.files {
		names = append(names, name)
	}
	sort.Strings(names)
	h := crc32.NewIEEE()
	for _, name := range names {
		f := fs.mu.files[name]
		f.mu.Lock()
		fmt.Fprintf(h, "%s %d\n", name, len(f.data))
		h.Write(f.data)
		f.mu.Unlock()
	}
	return fmt.Sprintf("%d %08x", len(names), h.Sum32())
}

// buildSealedLog writes batches until the log has n segments, all durable.
func buildSealedLog(t *testing.T, n int) (*MemFS, *Log, []Batch, Options) {
	t.Helper()
	fs := NewMemFS()
	opts := Options{FS: fs, SegmentBytes: 1024, IndexInterval: 200, MaxIndexBytes: 1024, Logger: quietLogger}
	l := mustOpen(t, "/log", opts)
	var bs []Batch
	for i := 0; len(l.Segments()) < n; i++ {
		b := testBatch(i, 1+i%3, int64(i))
		mustAppend(t, l, b, int32(1+i/5))
		bs = append(bs, append(Batch(nil), b...))
	}
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return fs, l, bs, opts
}

// TestCrashDuringRetention: retention renames the files of several
// segments to *.deleted and removes them. A crash in between must leave a
// log that Open accepts, with its end unchanged and every batch from its
// (possibly not yet advanced) start on: a .log gone or renamed with its
// indexes left, indexes gone with their .log left, and no gap in base
// offsets, whatever the file system persisted of the renames and removals.
func TestCrashDuringRetention(t *testing.T) {
	fs, l, bs, opts := buildSealedLog(t, 6)
	segs := l.Segments()
	leo := l.LogEndOffset()
	l.opts.RetentionBytes = 1 // delete every sealed segment
	var deleted int
	states := recordDirCrashes(t, fs, l, func() {
		var err error
		if deleted, err = l.ApplyRetention(ctx); err != nil {
			t.Fatal(err)
		}
	})
	if deleted != len(segs)-1 {
		t.Fatalf("retention deleted %d segments, want %d", deleted, len(segs)-1)
	}
	l.crashForTest()
	starts := map[int64]bool{}
	for _, s := range segs {
		starts[s] = true
	}
	n := 0
	seen := map[string]bool{}
	for _, st := range states {
		st.each(t, seen, func(fs *MemFS, what string) {
			for _, truncate := range []bool{false, true} {
				n++
				o := opts
				o.FS, o.TruncateOnCorruption = fs.CrashClone(), truncate
				l, err := Open(ctx, "/log", o)
				if err != nil {
					t.Fatalf("%s (TruncateOnCorruption=%v): Open: %v", what, truncate, err)
				}
				start := l.LogStartOffset()
				if !starts[start] || l.LogEndOffset() != leo {
					t.Fatalf("%s (TruncateOnCorruption=%v): log [%d, %d), want a segment base to %d",
						what, truncate, start, l.LogEndOffset(), leo)
				}
				got := readAll(t, l, start)
				var want []Batch
				for _, b := range bs {
					if b.BaseOffset() >= start {
						want = append(want, b)
					}
				}
				if len(got) != len(want) {
					t.Fatalf("%s: %d batches from %d, want %d", what, len(got), start, len(want))
				}
				for i := range want {
					if !bytes.Equal(got[i], want[i]) {
						t.Fatalf("%s: batch %d differs", what, i)
					}
				}
				l.Close()
			}
		})
	}
	t.Logf("%d crash states", n)
}

// TestCrashDuringTruncation: TruncateTo removes the segments after the cut,
// newest first. A crash in between must leave a prefix of the old log that
// Open accepts (without TruncateOnCorruption) and that holds at least every
// batch before the cut; a gap where a middle segment's removal was durable
// and a later one's was not is corruption to Open.
func TestCrashDuringTruncation(t *testing.T) {
	fs, l, bs, opts := buildSealedLog(t, 6)
	cut := bs[len(bs)/3].BaseOffset() + 1 // inside a sealed segment
	var newLEO int64
	states := recordDirCrashes(t, fs, l, func() {
		var err error
		if newLEO, err = l.TruncateTo(ctx, cut); err != nil {
			t.Fatal(err)
		}
	})
	l.crashForTest()
	n := 0
	seen := map[string]bool{}
	for _, st := range states {
		st.each(t, seen, func(fs *MemFS, what string) {
			n++
			o := opts
			o.FS = fs.CrashClone()
			l, err := Open(ctx, "/log", o)
			if err != nil {
				t.Fatalf("%s: Open: %v", what, err)
			}
			defer l.Close()
			got := readAll(t, l, 0)
			if l.LogEndOffset() < newLEO || len(got) > len(bs) {
				t.Fatalf("%s: log ends at %d with %d batches, want at least %d", what, l.LogEndOffset(), len(got), newLEO)
			}
			for i := range got {
				if !bytes.Equal(got[i], bs[i]) {
					t.Fatalf("%s: batch %d differs", what, i)
				}
			}
		})
	}
	t.Logf("%d crash states", n)
}
