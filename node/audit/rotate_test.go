package audit

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/node/audit/audittest"
)

// openRotating opens path rotating past maxBytes, keeping maxFiles, with a
// clock that moves a millisecond a line.
func openRotating(t *testing.T, path string, maxBytes int64, maxFiles int) *Log {
	t.Helper()
	l, err := Open(path, 1, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	l.now = func() time.Time { now = now.Add(time.Millisecond); return now }
	l.SetRotation(maxBytes, maxFiles)
	return l
}

// writeNumbered writes admin lines numbered from..to-1.
func writeNumbered(l *Log, from, to int) {
	for i := from; i < to; i++ {
		l.Admin(Who{Principal: "User:ops"}, "CreateTopic", map[string]int{"n": i}, nil, ResultOK, "")
	}
}

// trailLines returns every line of path's trail (rotated files first), and
// the numbers of its admin lines.
func trailLines(t *testing.T, path string) (lines []string, numbers []int) {
	t.Helper()
	files, err := RotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, path) {
		b, err := os.ReadFile(f)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, ln := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if ln == "" {
				continue
			}
			lines = append(lines, ln)
			var v struct {
				Event   string
				Request struct{ N *int }
			}
			if err := json.Unmarshal([]byte(ln), &v); err != nil {
				t.Fatalf("%s: %q: %v", f, ln, err)
			}
			if v.Event == EventAdmin && v.Request.N != nil {
				numbers = append(numbers, *v.Request.N)
			}
		}
	}
	return lines, numbers
}

// wantNumbers fails unless numbers are from..to-1, each once, in order.
func wantNumbers(t *testing.T, numbers []int, from, to int) {
	t.Helper()
	if len(numbers) != to-from {
		t.Fatalf("%d numbered lines, want %d (%d..%d): %v", len(numbers), to-from, from, to-1, numbers)
	}
	for i, n := range numbers {
		if n != from+i {
			t.Fatalf("line %d is number %d, want %d: %v", i, n, from+i, numbers)
		}
	}
}

// Past MaxBytes the file is rotated: no file passes it, every line is in
// the trail once and in order, the chain runs across the files, the names
// sort by time, and the syslog collector gets every line, unaffected.
func TestRotation(t *testing.T) {
	col := audittest.Listen(t, "127.0.0.1:0")
	path := filepath.Join(t.TempDir(), "audit.log")
	const maxBytes = 2048
	l := openRotating(t, path, maxBytes, 0)
	if err := l.ForwardTo("tcp://"+col.Addr(), ForwardTLS{}); err != nil {
		t.Fatal(err)
	}
	writeNumbered(l, 0, 200)
	rotations := l.Counts().Rotations
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := RotatedFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 || uint64(len(files)) != rotations {
		t.Fatalf("%d rotated files, %d rotations; want several, one file each", len(files), rotations)
	}
	for i, f := range append(files, path) {
		fi, err := os.Stat(f)
		if err != nil || fi.Size() > maxBytes || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v; want at most %d bytes, mode 0600", f, fi.Size(), err, maxBytes)
		}
		if i < len(files) && fi.Size() < maxBytes/2 { // a line is some 150 bytes
			t.Fatalf("%s rotated at %d bytes, far below %d", f, fi.Size(), maxBytes)
		}
	}
	if !strings.HasPrefix(files[0], path+".20261203T0900") {
		t.Fatalf("rotated file %s; want %s.<rotation time>", files[0], path)
	}
	lines, numbers := trailLines(t, path)
	wantNumbers(t, numbers, 0, 200)
	reps, err := VerifyTrail(path)
	if err != nil || len(reps) != len(files)+1 || reps[0].Anchor != "" {
		t.Fatalf("VerifyTrail: %d reports, %v; want %d files from the start of the chain", len(reps), err, len(files)+1)
	}
	for i, want := range lines {
		if _, msg := syslogMsg(t, col.Next(t)); msg != want {
			t.Fatalf("syslog message %d: %q; want the trail's line %q", i+1, msg, want)
		}
	}
	// A restart appends to the file and goes on rotating.
	l = openRotating(t, path, maxBytes, 0)
	writeNumbered(l, 200, 300)
	l.Close()
	if _, numbers = trailLines(t, path); len(numbers) != 300 {
		t.Fatalf("%d numbered lines after the restart, want 300", len(numbers))
	}
	if _, err := VerifyTrail(path); err != nil {
		t.Fatal(err)
	}
}

// MaxFiles rotated files are kept, the newest; the trail's chain still
// verifies, from the hash of the last line removed.
func TestRotationKeepsMaxFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openRotating(t, path, 1024, 3)
	writeNumbered(l, 0, 200)
	l.Close()
	files, err := RotatedFiles(path)
	if err != nil || len(files) != 3 {
		t.Fatalf("rotated files %v, %v; want 3", files, err)
	}
	_, numbers := trailLines(t, path)
	if len(numbers) == 0 || numbers[len(numbers)-1] != 199 {
		t.Fatalf("numbers %v; want the newest lines", numbers)
	}
	wantNumbers(t, numbers, numbers[0], 200)
	reps, err := VerifyTrail(path)
	if err != nil || reps[0].Anchor == "" {
		t.Fatalf("VerifyTrail: %v, %v; want it intact, continuing from a removed file", reps, err)
	}
}

// A crash mid-rotation, after the rename (FILE missing) or after the create
// (FILE empty): the next start continues the chain from the rotated file and
// reads from it how the run before ended; no line is lost or repeated.
func TestRotationCrash(t *testing.T) {
	for _, created := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "audit.log")
		l := openRotating(t, path, 1<<20, 0)
		writeNumbered(l, 0, 10)
		l.Stopped(Who{Principal: "User:node1"}, nil)
		l.Close()
		// What the disk holds after a crash in the next rotation.
		if err := os.Rename(path, rotatedName(path, time.Now(), "")); err != nil {
			t.Fatal(err)
		}
		if created {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		l = openRotating(t, path, 1<<20, 0)
		if l.previous != PreviousStopped {
			t.Fatalf("created %v: previous %q; want %q, from the rotated file's stop line", created, l.previous, PreviousStopped)
		}
		writeNumbered(l, 10, 20)
		l.Close()
		_, numbers := trailLines(t, path)
		wantNumbers(t, numbers, 0, 20)
		if reps, err := VerifyTrail(path); err != nil || len(reps) != 2 || reps[1].Anchor != reps[0].Last {
			t.Fatalf("created %v: VerifyTrail %v, %v; want the new file to continue the rotated one", created, reps, err)
		}
	}
}

// A failed rotation (the rotated name is taken) loses no line: it goes to
// the file open, and a later line rotates.
func TestRotationFailsWithoutLoss(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l := openRotating(t, path, 512, 0)
	at := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return at }
	writeNumbered(l, 0, 1)
	// A directory, not empty, where the rotated file would go.
	blocker := rotatedName(path, at, "")
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeNumbered(l, 1, 10)
	if files, _ := RotatedFiles(path); len(files) != 0 || l.Counts().Rotations != 0 {
		t.Fatalf("rotated %v with the name taken", files)
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	writeNumbered(l, 10, 20)
	l.Close()
	if l.Counts().Rotations == 0 {
		t.Fatal("no rotation once the name was free")
	}
	_, numbers := trailLines(t, path)
	wantNumbers(t, numbers, 0, 20)
	if _, err := VerifyTrail(path); err != nil {
		t.Fatal(err)
	}
}

// VerifyTrail names the break where a rotated file was removed from the
// middle of the trail, or the newest one before FILE.
func TestVerifyTrailFindsARemovedFile(t *testing.T) {
	for _, which := range []string{"middle", "newest"} {
		path := filepath.Join(t.TempDir(), "audit.log")
		l := openRotating(t, path, 1024, 0)
		writeNumbered(l, 0, 100)
		l.Close()
		files, _ := RotatedFiles(path)
		gone, next := files[len(files)/2], files[len(files)/2+1]
		if which == "newest" {
			gone, next = files[len(files)-1], path
		}
		if err := os.Remove(gone); err != nil {
			t.Fatal(err)
		}
		_, err := VerifyTrail(path)
		if err == nil || !strings.Contains(err.Error(), next+" does not continue") {
			t.Fatalf("%s file removed: %v; want a break at %s", which, err, next)
		}
	}
}

// A rotated name is later than the newest one, even when the clock went
// back, and sorts by time.
func TestRotatedName(t *testing.T) {
	at := time.Date(2026, 12, 3, 9, 0, 0, 5, time.UTC)
	a := rotatedName("/x/audit.log", at, "")
	if a != "/x/audit.log.20261203T090000.000000005Z" || !isRotatedSuffix(strings.TrimPrefix(a, "/x/audit.log.")) {
		t.Fatalf("rotatedName = %s", a)
	}
	if b := rotatedName("/x/audit.log", at.Add(-time.Hour), a); b != "/x/audit.log.20261203T090000.000000006Z" {
		t.Fatalf("after the clock went back: %s", b)
	}
	for _, s := range []string{"1", "20261203T090000Z", "20261203T090000.000000005Z.gz", "20261203T090000.000000005"} {
		if isRotatedSuffix(s) {
			t.Fatalf("%q taken for a rotated suffix", s)
		}
	}
}

// FuzzTail: any file gives its last line (no newline in it, at the end of
// the file) or an error, never a panic; Open and the rotation's restart read
// the last line of a file with it.
func FuzzTail(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"))
	f.Add([]byte("{\"a\":1}\n{\"b\""))
	f.Add([]byte("\n"))
	f.Add([]byte(""))
	path := filepath.Join(f.TempDir(), "audit.log")
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fh, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		last, cut, err := tail(fh)
		if err != nil || len(data) == 0 && last == nil {
			return
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if string(last) != lines[len(lines)-1] || cut != (len(data) > 0 && data[len(data)-1] != '\n') {
			t.Fatalf("tail(%q) = %q, %v", data, last, cut)
		}
	})
}
