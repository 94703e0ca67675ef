package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readLines parses every line of path.
func readLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// An admin line and a denied line carry every key of the format; the file
// is appended to across opens and is private to its owner.
func TestLinesInTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 3, 9, 30, 0, 123456789, time.FixedZone("", 3600))
	l.now = func() time.Time { return at }
	type req struct {
		Name       string
		Partitions int32
	}
	ops := Who{Principal: "User:ops", Authenticated: true, Addr: "127.0.0.1:5000"}
	l.Admin(ops, "CreateTopic", req{"payments", 6}, map[string]any{"Err": 0}, ResultOK, "")
	l.Denied(Who{Principal: "User:app", Addr: "127.0.0.1:6000"}, "Write", "topic", "payments", "TopicAuthorizationFailed", "principal User:app may not Write")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = Open(path, 3, nil); err != nil {
		t.Fatal(err)
	}
	l.Admin(ops, "DeleteTopic", nil, nil, "UnknownTopicOrPartition", "no topic x")
	l.Close()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v; want 0600", fi.Mode(), err)
	}
	lines := readLines(t, path)
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3", len(lines))
	}
	if lines[0]["prev"] != "" || len(lines[1]["prev"].(string)) != 64 {
		t.Fatalf("prev of the first two lines: %q, %q", lines[0]["prev"], lines[1]["prev"])
	}
	for _, l := range lines {
		delete(l, "prev") // chain_test.go checks the chain
	}
	got, _ := json.Marshal(lines[0])
	want := `{"addr":"127.0.0.1:5000","authenticated":true,"event":"admin","node":3,"op":"CreateTopic","principal":"User:ops",` +
		`"request":{"Name":"payments","Partitions":6},"response":{"Err":0},"result":"ok","time":"2026-12-03T08:30:00.123456789Z"}`
	if string(got) != want {
		t.Fatalf("admin line\n%s\nwant\n%s", got, want)
	}
	got, _ = json.Marshal(lines[1])
	want = `{"addr":"127.0.0.1:6000","authenticated":false,"event":"denied","message":"principal User:app may not Write","node":3,` +
		`"op":"Write","principal":"User:app","resource":"topic","resource_name":"payments","result":"TopicAuthorizationFailed","time":"2026-12-03T08:30:00.123456789Z"}`
	if string(got) != want {
		t.Fatalf("denied line\n%s\nwant\n%s", got, want)
	}
	if lines[2]["op"] != "DeleteTopic" || lines[2]["result"] != "UnknownTopicOrPartition" || lines[2]["request"] != nil {
		t.Fatalf("third line %v", lines[2])
	}
}

// Denied lines over DeniedPerSecond are counted, and the next line written
// says how many were left out; admin lines are never limited.
func TestDeniedLinesAreRateLimited(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := Open(path, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	at := time.Unix(1_800_000_000, 0)
	l.now = func() time.Time { return at }
	who := Who{Principal: "User:app"}
	for range DeniedPerSecond + 50 {
		l.Denied(who, "Write", "topic", "t", "TopicAuthorizationFailed", "")
	}
	for range 3 {
		l.Admin(who, "CreateTopic", nil, nil, ResultOK, "")
	}
	if c := l.Counts(); c.Written != DeniedPerSecond+3 || c.Suppressed != 50 || c.WriteErrors != 0 {
		t.Fatalf("counts %+v", c)
	}
	at = at.Add(50 * time.Millisecond) // 5 tokens
	for range 6 {
		l.Denied(who, "Write", "topic", "t", "TopicAuthorizationFailed", "")
	}
	lines := readLines(t, path)
	var denied []map[string]any
	for _, ln := range lines {
		if ln["event"] == EventDenied {
			denied = append(denied, ln)
		}
	}
	if len(denied) != DeniedPerSecond+5 {
		t.Fatalf("%d denied lines, want %d", len(denied), DeniedPerSecond+5)
	}
	if s := denied[DeniedPerSecond]["suppressed"]; s != float64(50) {
		t.Fatalf("first line after the limit: suppressed %v, want 50", s)
	}
	if s := denied[DeniedPerSecond+1]["suppressed"]; s != nil {
		t.Fatalf("the line after it: suppressed %v, want none", s)
	}
	if c := l.Counts(); c.Suppressed != 51 {
		t.Fatalf("suppressed %d, want 51", c.Suppressed)
	}
}

// Without a file the lines go to the node's log; a nil Log does nothing.
func TestLinesInTheNodeLog(t *testing.T) {
	var buf bytes.Buffer
	l, err := Open("", 2, slog.New(slog.NewJSONHandler(&buf, nil)))
	if err != nil {
		t.Fatal(err)
	}
	l.Admin(Who{Principal: "User:ops"}, "DeleteGroup", map[string]string{"Group": "billing"}, nil, ResultOK, "")
	var rec struct {
		Msg  string         `json:"msg"`
		Line map[string]any `json:"line"`
	}
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec.Msg != "audit" || rec.Line["op"] != "DeleteGroup" {
		t.Fatalf("node log %q: %v", buf.String(), err)
	}
	var nilLog *Log
	nilLog.Admin(Who{}, "x", nil, nil, ResultOK, "")
	nilLog.Denied(Who{}, "x", "topic", "t", "", "")
	if nilLog.Counts() != (Counts{}) || nilLog.Close() != nil {
		t.Fatal("nil Log")
	}
}

// A file that cannot be opened is an error naming the audit log.
func TestOpenFails(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "no", "such", "dir", "audit.log"), 1, nil)
	if err == nil || !strings.Contains(err.Error(), "audit log:") {
		t.Fatalf("err %v", err)
	}
}
