package cli

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
)

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// consumeThroughTruncation runs consume with args on partition 0 of a
// fake topic holding a, then b c; once a b c are printed, an unclean
// election leaves the leader with a only and it writes x y z w in a new
// epoch. It returns stdout, stderr and the exit status.
func consumeThroughTruncation(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 1)
	for _, in := range []string{"a\n", "b\nc\n"} {
		if _, errOut, code := runClientCLI(t, strings.NewReader(in), "produce", "payments", "--partition", "0", "--bootstrap", fc.Bootstrap()); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out, errb lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runWithInput(ctx, append([]string{"paymentlog", "consume", "payments", "--partition", "0",
			"--max-wait", "50ms", "--bootstrap", fc.Bootstrap()}, args...), strings.NewReader(""), &out, &errb)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for out.String() != "a\nb\nc\n" {
		select {
		case code := <-done:
			t.Fatalf("consume exited %d before the truncation: %q %q", code, out.String(), errb.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("consume printed %q in 30 s", out.String())
		}
	}
	unclean(t, fc, "payments")
	if _, errOut, code := runClientCLI(t, strings.NewReader("x\ny\nz\nw\n"), "produce", "payments", "--partition", "0", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	select {
	case code := <-done:
		return out.String(), errb.String(), code
	case <-time.After(30 * time.Second):
		cancel()
		<-done
		t.Fatalf("consume still running after the truncation: %q %q", out.String(), errb.String())
	}
	return "", "", 0
}

// unclean truncates partition 0 to its first record and moves its
// leadership (a new epoch), as an unclean election to a replica holding
// only that record does.
func unclean(t *testing.T, fc *clienttest.Cluster, topic string) {
	t.Helper()
	fc.TruncateLog(topic, 0, 1)
	old, _ := fc.Leader(topic, 0)
	fc.SetLeader(topic, 0, old%3+1)
}

// TestConsumeFailsOnLogTruncation: consume stops with exit status 1 and one
// line naming the partition, the divergence point and the position, rather
// than printing z w as if they followed c.
func TestConsumeFailsOnLogTruncation(t *testing.T) {
	out, errOut, code := consumeThroughTruncation(t)
	if out != "a\nb\nc\n" {
		t.Errorf("stdout %q, want only a b c", out)
	}
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "partition 0: log truncated") ||
		!strings.Contains(errOut, "from offset 1 up to the position 3") || !strings.Contains(errOut, "--from 1") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}

// TestConsumeRewindsOnLogTruncation: with --on-truncation rewind, consume
// says so on stderr and prints the leader's records from the divergence.
func TestConsumeRewindsOnLogTruncation(t *testing.T) {
	out, errOut, code := consumeThroughTruncation(t, "--on-truncation", "rewind", "--max", "7")
	if code != 0 || out != "a\nb\nc\nx\ny\nz\nw\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "partition 0: log truncated") || !strings.Contains(errOut, "from offset 1") {
		t.Fatalf("stderr %q", errOut)
	}
}

func TestConsumeOnTruncationUsage(t *testing.T) {
	if _, errOut, code := runClientCLI(t, nil, "consume", "payments", "--on-truncation", "ignore", "--bootstrap", "127.0.0.1:1"); code != 2 ||
		!strings.Contains(errOut, "--on-truncation") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
