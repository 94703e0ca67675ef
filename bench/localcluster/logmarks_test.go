package localcluster

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyLogsSinceMarks(t *testing.T) {
	t.Parallel()
	c := startFake(t, "1", Options{Nodes: 2})
	ctx := context.Background()
	for _, id := range []int32{1, 2} {
		if err := c.WaitFor(ctx, logContains(c, id, "listening on")); err != nil {
			t.Fatal(err)
		}
	}
	marks := c.LogMarks()
	if len(marks) != 2 || marks[1] == 0 || marks[2] == 0 {
		t.Fatalf("marks %v", marks)
	}
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitFor(ctx, logContains(c, 1, "start #2")); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "trial-1")
	if err := c.CopyLogsSince(marks, dir); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if got := read("node1.log"); !strings.Contains(got, "start #2") || strings.Contains(got, "start #1") {
		t.Fatalf("node1.log since the mark:\n%s", got)
	}
	if got := read("node2.log"); strings.Contains(got, "start #1") {
		t.Fatalf("node2.log since the mark has lines from before it:\n%s", got)
	}
	// Without a mark a log is copied whole.
	if err := c.CopyLogsSince(LogMarks{}, dir); err != nil {
		t.Fatal(err)
	}
	if got := read("node2.log"); !strings.Contains(got, "start #1") {
		t.Fatalf("node2.log without a mark:\n%s", got)
	}
}

// TestLogSince: whole lines only, each once, from where the last call
// stopped; a line still being written waits for its newline.
func TestLogSince(t *testing.T) {
	t.Parallel()
	c := startFake(t, "1", Options{Nodes: 1})
	ctx := context.Background()
	if err := c.WaitFor(ctx, logContains(c, 1, "listening on")); err != nil {
		t.Fatal(err)
	}
	b, off, err := c.LogSince(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "start #1") || !strings.Contains(string(b), "listening on") || off != int64(len(b)) {
		t.Fatalf("from 0: offset %d, %q", off, b)
	}
	f, err := os.OpenFile(c.Node(1).LogPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("half a li")
	if b, next, err := c.LogSince(1, off); err != nil || len(b) != 0 || next != off {
		t.Fatalf("a line without its newline: %q, offset %d (was %d), %v", b, next, off, err)
	}
	f.WriteString("ne\nand the st")
	b, next, err := c.LogSince(1, off)
	if err != nil || string(b) != "half a line\n" || next != off+int64(len(b)) {
		t.Fatalf("after the newline: %q, offset %d (was %d), %v", b, next, off, err)
	}
	if _, _, err := c.LogSince(9, 0); err == nil {
		t.Fatal("node 9 of 1 has a log")
	}
}
