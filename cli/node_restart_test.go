package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/segment"
)

// stoppedNode is a node that has stopped on its own with err.
type stoppedNode struct{ err error }

func (n stoppedNode) Done() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
func (n stoppedNode) Shutdown(context.Context) error { return nil }
func (n stoppedNode) Err() error                     { return n.err }

// A node stopped by its scrub is started again in the same process, at
// most scrubRestartMax times in scrubRestartWindow; any other failure, or
// --log-scrub-restart=false, ends node start. Each start is told how many
// came before it in the process (paymentlog_node_in_process_restarts_total).
func TestNodeStartRestartsAfterScrubCorruption(t *testing.T) {
	scrubErr := fmt.Errorf("node: partition log payments-0 failed: %w", fmt.Errorf("%w: %w", segment.ErrLogFailed,
		fmt.Errorf("%w: batch at offset 12", segment.ErrScrubCorrupt)))
	fsyncErr := fmt.Errorf("node: partition log payments-0 failed: %w: fsync: input/output error", segment.ErrLogFailed)
	for _, c := range []struct {
		name       string
		stopWith   error
		extra      []string
		wantStarts int
		wantLog    string
	}{
		{"scrub corruption", scrubErr, nil, scrubRestartMax + 1, "not starting the node again"},
		{"scrub corruption, restarts off", scrubErr, []string{"--log-scrub-restart=false"}, 1, ""},
		{"failed fsync", fsyncErr, nil, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func(orig func(context.Context, node.Config) (runningNode, error)) { startNode = orig }(startNode)
			starts := 0
			var counts []int // each start's InProcessRestarts
			startNode = func(_ context.Context, cfg node.Config) (runningNode, error) {
				starts++
				counts = append(counts, cfg.InProcessRestarts)
				if starts > scrubRestartMax+1 {
					return nil, errors.New("started too often")
				}
				return stoppedNode{err: c.stopWith}, nil
			}
			var stdout, stderr bytes.Buffer
			args := append([]string{"paymentlog", "node", "start", "--id", "1", "--addr", "127.0.0.1:1",
				"--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1"}, c.extra...)
			code := RunContext(context.Background(), args, &stdout, &stderr)
			if code != 1 || starts != c.wantStarts {
				t.Fatalf("exit %d after %d starts, want 1 after %d; stderr:\n%s", code, starts, c.wantStarts, stderr.String())
			}
			for i, n := range counts {
				if n != i {
					t.Fatalf("start %d was told of %d earlier restarts, want %d (all: %v)", i, n, i, counts)
				}
			}
			if restarts := strings.Count(stderr.String(), "starting the node again in this process"); restarts != c.wantStarts-1 {
				t.Errorf("%d restart lines, want %d; stderr:\n%s", restarts, c.wantStarts-1, stderr.String())
			}
			if !strings.Contains(stderr.String(), c.wantLog) {
				t.Errorf("stderr lacks %q:\n%s", c.wantLog, stderr.String())
			}
		})
	}
}

func TestRestartBudget(t *testing.T) {
	b := restartBudget{max: 2, window: time.Hour}
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	for i, c := range []struct {
		at   time.Duration
		want bool
	}{
		{0, true},
		{10 * time.Minute, true},
		{20 * time.Minute, false}, // two within the hour
		{59 * time.Minute, false},
		{60 * time.Minute, true}, // the first has left the window
		{65 * time.Minute, false},
		{70 * time.Minute, true}, // the second has left it too
	} {
		if got := b.take(t0.Add(c.at)); got != c.want {
			t.Fatalf("take %d at +%v = %v, want %v", i, c.at, got, c.want)
		}
	}
}
