package audit

import (
	"errors"
	"path/filepath"
	"testing"
)

// Start lines say how the run before ended, as the file shows it: a new
// file, after this node's stop line, or without one (killed); stop lines
// carry the error that ended the node; tls-reload lines their details and
// a refusal.
func TestNodeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	self := Who{Principal: "User:node1", Authenticated: true, Addr: "127.0.0.1:9001"}
	run := func(stop func(*Log)) {
		l, err := Open(path, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		l.Started(self, "1.2.3")
		stop(l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(func(l *Log) { l.Stopped(self, nil) })
	run(func(l *Log) {}) // killed: no stop line
	run(func(l *Log) {
		l.TLSReloaded(self, map[string]any{"serial": "ab", "revoked": 1}, nil)
		l.TLSReloaded(self, nil, errors.New("key does not match"))
		l.Stopped(self, errors.New("node: disk failed"))
	})
	run(func(l *Log) { l.Admin(self, "CreateTopic", nil, nil, ResultOK, "") }) // killed after another line
	run(func(l *Log) {})

	lines := readLines(t, path)
	type want struct{ op, result, previous, message string }
	wants := []want{
		{OpStart, ResultOK, PreviousNone, ""},
		{OpStop, ResultOK, "", ""},
		{OpStart, ResultOK, PreviousStopped, ""},
		{OpStart, ResultOK, PreviousNoStop, ""},
		{OpTLSReload, ResultOK, "", ""},
		{OpTLSReload, ResultRefused, "", "key does not match"},
		{OpStop, ResultError, "", "node: disk failed"},
		{OpStart, ResultOK, PreviousStopped, ""},
		{"CreateTopic", ResultOK, "", ""},
		{OpStart, ResultOK, PreviousNoStop, ""},
	}
	if len(lines) != len(wants) {
		t.Fatalf("%d lines, want %d: %v", len(lines), len(wants), lines)
	}
	for i, w := range wants {
		l := lines[i]
		d, _ := l["details"].(map[string]any)
		if l["op"] != w.op || l["result"] != w.result || (w.message != "" && l["message"] != w.message) ||
			l["principal"] != "User:node1" || l["addr"] != "127.0.0.1:9001" {
			t.Fatalf("line %d: %v; want %+v", i+1, l, w)
		}
		if w.op == OpStart {
			if d["previous"] != w.previous || d["version"] != "1.2.3" || d["pid"] == nil || l["event"] != EventNode {
				t.Fatalf("start line %d: %v; want previous %q", i+1, l, w.previous)
			}
		}
	}
	if d := lines[4]["details"].(map[string]any); d["serial"] != "ab" || d["revoked"] != float64(1) {
		t.Fatalf("tls-reload details %v", d)
	}
	if _, err := verifyFile(t, path); err != nil {
		t.Fatalf("chain across the runs: %v", err)
	}
}

// Another node's stop line at the end of a shared file is not this node's.
func TestPreviousRunIsThisNodes(t *testing.T) {
	stop := []byte(`{"node":2,"event":"node","op":"stop"}`)
	if got := previousRun(stop, 1); got != PreviousNoStop {
		t.Fatalf("node 2's stop line, for node 1: %q", got)
	}
	if got := previousRun(stop, 2); got != PreviousStopped {
		t.Fatalf("node 2's stop line, for node 2: %q", got)
	}
	if got := previousRun([]byte(`{"node":2,"ev`), 2); got != PreviousNoStop {
		t.Fatalf("a cut line: %q", got)
	}
}
