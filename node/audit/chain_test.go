package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeLines opens path, writes n admin lines and closes it.
func writeLines(t *testing.T, path string, n int) {
	t.Helper()
	l, err := Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l.Admin(Who{Principal: "User:ops"}, "CreateTopic", map[string]int{"n": i}, nil, ResultOK, "")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func verifyFile(t *testing.T, path string) (ChainReport, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return VerifyChain(f)
}

// The chain holds across reopens (a restart) and a write cut by a crash;
// editing, removing or inserting a line breaks it at the line after.
func TestChain(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	writeLines(t, path, 3)
	writeLines(t, path, 2) // a restart continues the chain
	rep, err := verifyFile(t, path)
	if err != nil || rep.Lines != 5 || rep.Anchor != "" || len(rep.Last) != 64 {
		t.Fatalf("verify: %+v, %v", rep, err)
	}

	// A crash cut the last write: the next start ends that line and goes on.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"event":"admin","op":"Dele`)
	f.Close()
	writeLines(t, path, 1)
	if _, err := verifyFile(t, path); err == nil || !strings.Contains(err.Error(), "line 6 is not an audit line") {
		t.Fatalf("verify with a cut line: %v", err)
	}

	good := readFile(t, filepath.Join(filepath.Dir(path), "audit.log"))
	lines := bytes.SplitAfter(good, []byte("\n"))
	lines = lines[:5] // the five whole lines before the cut
	for _, c := range []struct {
		name string
		edit func([][]byte) [][]byte
		want string
	}{
		{"edited", func(ls [][]byte) [][]byte {
			ls[1] = bytes.Replace(ls[1], []byte(`"n":1`), []byte(`"n":7`), 1)
			return ls
		}, "line 3 does not follow line 2"},
		{"removed", func(ls [][]byte) [][]byte { return append(ls[:2:2], ls[3:]...) }, "line 3 does not follow line 2"},
		{"inserted", func(ls [][]byte) [][]byte {
			return append(ls[:4:4], ls[0], ls[4])
		}, "line 5 does not follow line 4"},
	} {
		ls := make([][]byte, len(lines))
		for i := range lines {
			ls[i] = bytes.Clone(lines[i])
		}
		if _, err := VerifyChain(bytes.NewReader(bytes.Join(c.edit(ls), nil))); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if rep, err := VerifyChain(bytes.NewReader(bytes.Join(lines, nil))); err != nil || rep.Lines != 5 {
		t.Fatalf("the untouched lines: %+v, %v", rep, err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzVerifyChain: any bytes give a report or an error, never a panic.
func FuzzVerifyChain(f *testing.F) {
	f.Add([]byte(`{"prev":"","op":"x"}` + "\n" + `{"prev":"00","op":"y"}` + "\n"))
	f.Add([]byte("not json\n"))
	f.Add([]byte(`{"prev":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := VerifyChain(bytes.NewReader(data))
		if err == nil && rep.Lines > 0 && len(rep.Last) != 64 {
			t.Fatalf("report %+v without an error", rep)
		}
	})
}
