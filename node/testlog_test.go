package node_test

import (
	"bytes"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// testLogTail is how many of a test's last log lines (its nodes' and
// clients', info and above) are printed when it fails.
const testLogTail = 400

// testLogs holds each running test's tail, so that every node and client
// of one test writes, in order, to one ring.
var testLogs sync.Map // testing.TB -> *logTail

// testLogger is the logger for a test's nodes and clients. With
// PAYMENTLOG_TEST_LOG set it writes everything (debug and up) to stderr.
// Otherwise it keeps the test's last testLogTail lines at info and above
// and prints them only if the test fails: a flake in CI then comes with the
// fences, elections and shrinks that led to it.
func testLogger(t testing.TB) *slog.Logger {
	if os.Getenv("PAYMENTLOG_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	v, loaded := testLogs.LoadOrStore(t, &logTail{})
	tail := v.(*logTail)
	if !loaded {
		t.Cleanup(func() {
			testLogs.Delete(t)
			if t.Failed() {
				t.Logf("the test's last %d log lines (info and above):\n%s", testLogTail, tail.String())
			}
		})
	}
	return slog.New(slog.NewTextHandler(tail, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// logTail is an io.Writer keeping the last testLogTail lines written to it
// (slog's handlers write one whole line per call).
type logTail struct {
	mu    sync.Mutex
	lines [][]byte
	next  int // where the next line goes once the ring is full
}

func (l *logTail) Write(p []byte) (int, error) {
	line := bytes.Clone(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) < testLogTail {
		l.lines = append(l.lines, line)
	} else {
		l.lines[l.next] = line
		l.next = (l.next + 1) % testLogTail
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b bytes.Buffer
	for i := range l.lines {
		b.Write(l.lines[(l.next+i)%len(l.lines)])
	}
	return b.String()
}
