// Package scripttest runs data-driven test scripts (in the spirit of
// cockroachdb/datadriven), for tests only. A script is a sequence of blocks:
//
//	# comment
//	command arg=value flag
//	----
//	expected output
//	<blank line>
//
// Run a test with -rewrite to regenerate the expected output in place.
package scripttest

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite expected output in testdata scripts")

// Rewrite reports whether -rewrite was given.
func Rewrite() bool { return *rewrite }

// Cmd is one parsed command line.
type Cmd struct {
	Line  int
	Name  string
	Args  map[string]string
	Flags map[string]bool
	Raw   string
}

// Has reports whether k was given as an argument or a flag.
func (c Cmd) Has(k string) bool { _, ok := c.Args[k]; return ok || c.Flags[k] }

// Run executes the script at path, comparing (or with -rewrite, replacing)
// each command's expected output with exec's.
func Run(t *testing.T, path string, exec func(t *testing.T, c Cmd) string) {
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
		cmd := parse(trimmed, lineNo)
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

func parse(line string, n int) Cmd {
	f := strings.Fields(line)
	c := Cmd{Line: n, Name: f[0], Args: map[string]string{}, Flags: map[string]bool{}, Raw: line}
	for _, a := range f[1:] {
		if k, v, ok := strings.Cut(a, "="); ok {
			c.Args[k] = v
		} else {
			c.Flags[a] = true
		}
	}
	return c
}

// Files lists dir/*.txt, failing the test if there are none.
func Files(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	return files
}

// Int returns argument k as an integer, or def if absent.
func (c Cmd) Int(t *testing.T, k string, def int64) int64 {
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

// Duration returns argument k as a duration, or def if absent.
func (c Cmd) Duration(t *testing.T, k string, def time.Duration) time.Duration {
	t.Helper()
	v, ok := c.Args[k]
	if !ok {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("line %d: %s=%q: %v", c.Line, k, v, err)
	}
	return d
}

// IDs returns argument k as a comma-separated list of ids.
func (c Cmd) IDs(t *testing.T, k string) []int32 {
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
