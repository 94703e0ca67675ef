package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"paymentlog/node"
)

// node start's usage errors are one line on stderr and exit status 2.
func TestNodeStartUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"node", "start"}, "--id, --addr, --data-dir, --controllers"},
		{[]string{"node", "start", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir}, "missing --controllers"},
		{[]string{"node", "start", "extra", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir, "--controllers", "1@127.0.0.1:1"}, "no arguments"},
		// Ids beyond int32 are refused, not wrapped onto another node's id.
		{[]string{"node", "start", "--id", "4294967297", "--addr", "127.0.0.1:0", "--data-dir", dir, "--controllers", "1@127.0.0.1:1"}, "--id 4294967297: must be 1-2147483647"},
		{[]string{"node", "start", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir, "--controllers", "4294967297@127.0.0.1:1"}, `bad node id "4294967297"`},
		{[]string{"node", "start", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir, "--controllers", "1@127.0.0.1:1", "--rack", "a/b"}, "rack"},
	} {
		out, errOut, code := runClientCLI(t, nil, c.args...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", c.args, code, out, errOut, c.want)
		}
	}
}

type failingShutdownNode struct{ done chan struct{} }

func (n failingShutdownNode) Done() <-chan struct{} { return n.done }
func (n failingShutdownNode) Shutdown(context.Context) error {
	return errors.New("leaderships not moved")
}
func (n failingShutdownNode) Err() error { return nil }

// A failed shutdown is reported on the app's stderr (it was os.Stderr, out
// of reach of whoever runs the app with other streams).
func TestNodeStartReportsShutdownErrorOnItsStderr(t *testing.T) {
	defer func(orig func(context.Context, node.Config) (runningNode, error)) { startNode = orig }(startNode)
	started := make(chan struct{})
	startNode = func(context.Context, node.Config) (runningNode, error) {
		close(started)
		return failingShutdownNode{done: make(chan struct{})}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- RunContext(ctx, []string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:1",
			"--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1"}, &stdout, &stderr)
	}()
	select {
	case <-started:
	case c := <-code:
		t.Fatalf("node start exited %d before starting the node: %q", c, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("node start did not start the node")
	}
	cancel() // SIGTERM
	select {
	case c := <-code:
		if !strings.Contains(stderr.String(), "paymentlog: shutdown: leaderships not moved") {
			t.Fatalf("exit %d, stderr %q: no shutdown error", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("node start did not return after its context ended")
	}
}
