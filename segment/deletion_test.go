package segment

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestCrashAtEachDeletionStep: a crash at every step of a deletion
// (before and after each fsync, rename and unlink of DeleteBefore and of
// DeleteRetained, with any of the directory operations not yet fsynced
// durable or lost) leaves a log that opens without TruncateOnCorruption,
// with no *.deleted file left after Open, a log start no lower than the
// one readers could see when the crash came (nor than before the pass),
// its log end, and every batch from its log start on. A deletion used to
// publish the new log start before any of it was durable (DeleteRetained
// wrote no log-start checkpoint at all): a crash then brought back a log
// start that readers had already seen move past.
func TestCrashAtEachDeletionStep(t *testing.T) {
	for _, how := range []string{"DeleteBefore", "DeleteRetained"} {
		t.Run(how, func(t *testing.T) {
			fs, l, bs, opts := buildSealedLog(t, 5)
			segs := l.Segments()
			leo := l.LogEndOffset()
			// A first pass moves the log start inside the first segment,
			// so that "no lower than before" is not just "at least 0".
			before := bs[1].BaseOffset()
			if err := l.DeleteBefore(ctx, before); err != nil || l.LogStartOffset() != before {
				t.Fatalf("DeleteBefore(%d): %v, log start %d", before, err, l.LogStartOffset())
			}
			upTo := segs[3]
			states := recordDirCrashes(t, fs, l, func() {
				var err error
				if how == "DeleteBefore" {
					err = l.DeleteBefore(ctx, upTo+1) // inside segment 3: segments 0-2 go
				} else {
					_, _, err = l.DeleteRetained(ctx, Retention{Bytes: 0, Age: -1, Now: time.Now(), Below: upTo})
				}
				if err != nil {
					t.Fatal(err)
				}
			})
			if segs := l.Segments(); segs[0] != upTo {
				t.Fatalf("segments %v after the deletion, want from %d", segs, upTo)
			}
			l.crashForTest()
			n := 0
			seen := map[string]bool{}
			for i, st := range states {
				st.each(t, seen, func(fs *MemFS, what string) {
					n++
					o := opts
					o.FS = fs.CrashClone()
					l, err := Open(ctx, "/log", o)
					if err != nil {
						t.Fatalf("step %d, %s: Open: %v", i, what, err)
					}
					defer l.Close()
					names, err := o.FS.ReadDir("/log")
					if err != nil {
						t.Fatal(err)
					}
					for _, name := range names {
						if strings.HasSuffix(name, deletedSuffix) {
							t.Fatalf("step %d, %s: %s left after Open (%v)", i, what, name, names)
						}
					}
					start := l.LogStartOffset()
					if start < before || start < st.start || start > upTo+1 || l.LogEndOffset() != leo {
						t.Fatalf("step %d, %s: log [%d, %d), readers saw the start at %d before the crash (%d before the pass); want it no lower, and the end at %d",
							i, what, start, l.LogEndOffset(), st.start, before, leo)
					}
					got := readAll(t, l, start)
					var want []Batch
					for _, b := range bs {
						if b.LastOffset() >= start {
							want = append(want, b)
						}
					}
					if len(got) != len(want) {
						t.Fatalf("step %d, %s: %d batches from %d, want %d", i, what, len(got), start, len(want))
					}
					for j := range want {
						if !bytes.Equal(got[j], want[j]) {
							t.Fatalf("step %d, %s: batch %d differs", i, what, j)
						}
					}
				})
			}
			t.Logf("%d steps, %d crash states", len(states), n)
		})
	}
}

// TestDeletionWhoseRenamesFail: when the renames to *.deleted fail, the
// deletion still moves the log start (it is durable before any of them)
// and reports the error, the files are unlinked under their own names
// (so that no later segment of the same base reuses a file a View may
// map), and a reopened log starts where the deletion left it.
func TestDeletionWhoseRenamesFail(t *testing.T) {
	fs, l, bs, opts := buildSealedLog(t, 4)
	upTo := l.Segments()[2]
	fs.SetFault(func(op FaultOp, path string) error {
		if op == OpRename && strings.HasSuffix(path, deletedSuffix) {
			return errInjected
		}
		return nil
	})
	err := l.DeleteBefore(ctx, upTo)
	fs.SetFault(nil)
	if err == nil || l.LogStartOffset() != upTo {
		t.Fatalf("DeleteBefore: %v, log start %d; want the injected error and %d", err, l.LogStartOffset(), upTo)
	}
	names, _ := fs.ReadDir("/log")
	for _, name := range names {
		if b, ok := parseSegmentName(name); ok && b < upTo {
			t.Fatalf("%s still there: %v", name, names)
		}
	}
	mustAppend(t, l, testBatch(1000, 1, 1), l.mu.epochs.latest())
	if err := l.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	l.crashForTest()
	l = mustOpen(t, "/log", opts)
	defer l.Close()
	var want []Batch
	for _, b := range bs {
		if b.BaseOffset() >= upTo {
			want = append(want, b)
		}
	}
	got := readAll(t, l, l.LogStartOffset())
	if l.LogStartOffset() != upTo || len(got) != len(want)+1 || !bytes.Equal(got[0], want[0]) {
		t.Fatalf("reopened: log start %d with %d batches; want %d with %d", l.LogStartOffset(), len(got), upTo, len(want)+1)
	}
}

var errInjected = errorString("injected error")

// TestViewOutlivesDeletion: a View of a segment that a deletion removes
// (real files, mapped) keeps its bytes after the files are renamed and
// unlinked: the deletion drops only the log's reference to the mapping,
// and the memory is unmapped at the View's release.
func TestViewOutlivesDeletion(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, Options{SegmentBytes: 1024, IndexInterval: 200, MaxIndexBytes: 1024})
	defer l.Close()
	for i := 0; len(l.Segments()) < 3; i++ {
		mustAppend(t, l, testBatch(i, 2, int64(i)), 1)
	}
	v, err := l.Read(0, 1<<20, -1)
	if err != nil || len(v.Data) == 0 {
		t.Fatalf("Read(0): %v", err)
	}
	defer v.Release()
	want := append([]byte(nil), v.Data...)
	if err := l.DeleteBefore(ctx, l.Segments()[2]); err != nil {
		t.Fatal(err)
	}
	names, err := OSFS{}.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if b, ok := parseSegmentName(name); (ok && b == 0) || strings.HasSuffix(name, deletedSuffix) {
			t.Fatalf("%s left after the deletion: %v", name, names)
		}
	}
	if !bytes.Equal(v.Data, want) {
		t.Fatal("the View's bytes changed when its segment was deleted")
	}
	if _, err := SplitBatches(v.Data, func(b Batch) error { return b.Validate() }); err != nil {
		t.Fatalf("the View's batches after the deletion: %v", err)
	}
}
