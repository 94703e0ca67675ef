package audit

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// faults makes a Log's rotations fail: the next creates of the new file,
// the next directory fsyncs, and the next renames putting the file back.
type faults struct {
	mu                          sync.Mutex
	creates, syncDirs, putBacks int
	fired                       int // faults injected so far
}

var errInjected = errors.New("injected fault")

func (f *faults) take(n *int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if *n == 0 {
		return false
	}
	*n--
	f.fired++
	return true
}

func (f *faults) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates + f.syncDirs + f.putBacks
}

func (f *faults) fs(path string) rotateFS {
	return rotateFS{
		rename: func(oldpath, newpath string) error {
			if newpath == path && f.take(&f.putBacks) {
				return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: errInjected}
			}
			return os.Rename(oldpath, newpath)
		},
		create: func(p string) (*os.File, error) {
			if f.take(&f.creates) {
				return nil, &fs.PathError{Op: "open", Path: p, Err: errInjected}
			}
			return createFile(p)
		},
		syncDir: func(dir string) error {
			if f.take(&f.syncDirs) {
				return &fs.PathError{Op: "sync", Path: dir, Err: errInjected}
			}
			return syncDir(dir)
		},
	}
}

// A rotation that fails after its rename (the new file's create fails, or
// the directory's fsync after it), and one that then cannot put the file
// back either, loses no line and writes none twice: the line goes to the
// file open, the chain verifies across the files (what `log audit-verify`
// runs), the failure is logged and counted (RotationErrors), no empty or
// stray file is left, and a later line rotates. A restart while lines go
// on to the renamed file continues the chain from it.
func TestRotationFailuresAfterTheRename(t *testing.T) {
	cases := []struct {
		name                        string
		creates, syncDirs, putBacks int
		restart                     bool // close and open again while the faults last
	}{
		{name: "create fails", creates: 1},
		{name: "directory fsync fails", syncDirs: 1},
		{name: "create fails, putting back fails", creates: 1, putBacks: 1},
		{name: "directory fsync fails, putting back fails", syncDirs: 1, putBacks: 1},
		{name: "create keeps failing, putting back fails, restart", creates: 3, putBacks: 3, restart: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit.log")
			l := openRotating(t, path, 512, 0)
			var logs bytes.Buffer
			l.logger = slog.New(slog.NewTextHandler(&logs, nil))
			writeNumbered(l, 0, 10) // rotated a few times already
			before := l.Counts().Rotations
			if before == 0 {
				t.Fatal("no rotation before the faults")
			}
			f := &faults{creates: c.creates, syncDirs: c.syncDirs, putBacks: c.putBacks}
			l.fs = f.fs(path)
			n := 10
			for f.left() > 0 {
				if n > 100 {
					t.Fatalf("faults left after %d lines: %+v", n, f)
				}
				putBacks := f.putBacks
				writeNumbered(l, n, n+1)
				n++
				if f.putBacks < putBacks {
					// Put back failed just now: the line went to the renamed
					// file, FILE is missing.
					if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) || l.renamedOpen == "" {
						t.Fatalf("after a failed put back: FILE %v, lines go to %q; want FILE missing, the renamed file", err, l.renamedOpen)
					}
				}
			}
			wantErrors := uint64(f.fired - c.putBacks) // a put back fails inside a rotation's failure
			if c.restart {
				if got := l.Counts().RotationErrors; got != wantErrors {
					t.Fatalf("%d rotation errors before the restart, want %d", got, wantErrors)
				}
				l.Close()
				l = openRotating(t, path, 512, 0)
				l.logger = slog.New(slog.NewTextHandler(&logs, nil))
				wantErrors = 0
			}
			writeNumbered(l, n, n+20) // rotations work again
			c2 := l.Counts()
			l.Close()

			if c2.RotationErrors != wantErrors {
				t.Fatalf("%d rotation errors, want %d", c2.RotationErrors, wantErrors)
			}
			if c2.Rotations == 0 || !c.restart && c2.Rotations <= before {
				t.Fatalf("rotations %d (before the faults %d); want more once they are over", c2.Rotations, before)
			}
			if got := strings.Count(logs.String(), "audit log rotation failed"); uint64(got) != uint64(f.fired-c.putBacks) {
				t.Fatalf("%d rotation failures logged, want %d:\n%s", got, f.fired-c.putBacks, logs.String())
			}
			if c.putBacks > 0 && !strings.Contains(logs.String(), "lines go on to "+path+".") {
				t.Fatalf("the failed put back is not logged:\n%s", logs.String())
			}
			_, numbers := trailLines(t, path)
			wantNumbers(t, numbers, 0, n+20)
			reps, err := VerifyTrail(path)
			if err != nil || reps[0].Anchor != "" {
				t.Fatalf("VerifyTrail: %v, %v; want the chain whole from its start", reps, err)
			}
			for _, r := range reps {
				if r.Lines == 0 {
					t.Fatalf("%s is empty: a failed rotation left it", r.Path)
				}
			}
			ents, _ := os.ReadDir(filepath.Dir(path))
			if files, _ := RotatedFiles(path); len(ents) != len(files)+1 {
				t.Fatalf("%d files in the directory, %d rotated ones and FILE: a stray file", len(ents), len(files))
			}
		})
	}
}
