package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/signal"
	"strings"
	"syscall"
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
		{[]string{"node", "start", "--id", "1", "--addr", "127.0.0.1:0", "--data-dir", dir, "--controllers", "1@127.0.0.1:1", "--tls-reload-interval", "-1s"}, "--tls-reload-interval"},
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

type reloadingNode struct {
	failingShutdownNode
	reloads chan struct{}
}

func (n reloadingNode) Shutdown(context.Context) error { return nil }
func (n reloadingNode) ReloadTLS() (bool, error) {
	n.reloads <- struct{}{}
	return true, nil
}

// SIGHUP makes a running node reload its TLS files; --tls-reload-interval 0
// leaves the reloads to SIGHUP alone.
func TestNodeStartReloadsTLSOnSIGHUP(t *testing.T) {
	defer func(orig func(context.Context, node.Config) (runningNode, error)) { startNode = orig }(startNode)
	// A handler of the test's own, so that a SIGHUP sent before node start
	// listens cannot end the test process.
	hup := make(chan os.Signal, 16)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfgs := make(chan node.Config, 1)
	n := reloadingNode{failingShutdownNode{done: make(chan struct{})}, make(chan struct{}, 16)}
	startNode = func(_ context.Context, cfg node.Config) (runningNode, error) {
		cfgs <- cfg
		return n, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- RunContext(ctx, []string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:1",
			"--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1", "--tls-reload-interval", "0"}, &stdout, &stderr)
	}()
	select {
	case cfg := <-cfgs:
		if cfg.TLSReloadInterval >= 0 {
			t.Fatalf("--tls-reload-interval 0 gave the node TLSReloadInterval %v, want negative (SIGHUP only)", cfg.TLSReloadInterval)
		}
	case c := <-code:
		t.Fatalf("node start exited %d: %q", c, stderr.String())
	}
	deadline := time.After(10 * time.Second)
	for reloaded := false; !reloaded; {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		select {
		case <-n.reloads:
			reloaded = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("SIGHUP did not reload the node's TLS files")
		}
	}
	cancel()
	if c := <-code; c != 0 {
		t.Fatalf("exit %d: %q", c, stderr.String())
	}
}
