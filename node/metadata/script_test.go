package metadata

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tiny data-driven test runner (in the spirit of cockroachdb/datadriven):
// a script is a sequence of blocks
//
//	# comment
//	command arg=value flag
//	----
//	expected output
//	<blank line>
//
// Run with -rewrite to regenerate the expected output in place.

var rewrite = flag.Bool("rewrite", false, "rewrite expected output in testdata scripts")

type scriptCmd struct {
	Line  int
	Name  string
	Args  map[string]string
	Flags map[string]bool
	Raw   string
}

func (c scriptCmd) has(k string) bool { _, ok := c.Args[k]; return ok || c.Flags[k] }

func runScript(t *testing.T, path string, exec func(t *testing.T, c scriptCmd) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	lineNo := 0
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		lineNo++
		return sc.Text(), true
	}
	for {
		line, ok := next()
		if !ok {
			break
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			out.WriteString(line + "\n")
			continue
		}
		cmd := parseCmd(trimmed, lineNo)
		if sep, ok := next(); !ok || sep != "----" {
			t.Fatalf("%s:%d: want ---- after command", path, lineNo)
		}
		var want []string
		for {
			l, ok := next()
			if !ok || l == "" {
				break
			}
			want = append(want, l)
		}
		got := strings.TrimRight(exec(t, cmd), "\n")
		out.WriteString(line + "\n----\n")
		if got != "" {
			out.WriteString(got + "\n")
		}
		out.WriteString("\n")
		if !*rewrite && got != strings.Join(want, "\n") {
			t.Errorf("%s:%d: %s\n--- got:\n%s\n--- want:\n%s", path, cmd.Line, cmd.Raw, got, strings.Join(want, "\n"))
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func parseCmd(line string, n int) scriptCmd {
	f := strings.Fields(line)
	c := scriptCmd{Line: n, Name: f[0], Args: map[string]string{}, Flags: map[string]bool{}, Raw: line}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			c.Args[k] = v
		} else {
			c.Flags[a] = true
		}
	}
	return c
}

func scriptFiles(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	return files
}

func mustInt(t *testing.T, c scriptCmd, k string, def int64) int64 {
	t.Helper()
	v, ok := c.Args[k]
	if !ok {
		return def
	}
	var n int64
	if _, err := fmt.Sscan(v, &n); err != nil {
		t.Fatalf("line %d: %s=%q: %v", c.Line, k, v, err)
	}
	return n
}

func mustIDs(t *testing.T, c scriptCmd, k string) []int32 {
	t.Helper()
	v := c.Args[k]
	if v == "" {
		return nil
	}
	var out []int32
	for _, s := range strings.Split(v, ",") {
		var n int32
		if _, err := fmt.Sscan(s, &n); err != nil {
			t.Fatalf("line %d: %s=%q: %v", c.Line, k, v, err)
		}
		out = append(out, n)
	}
	return out
}
