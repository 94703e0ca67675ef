package localcluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A wait that times out reports the condition's last error from a try that
// ran to its end, not the one its own deadline cut short: the chaos runs
// reported "no running node answered" (every node's call cut by the
// deadline) for a node held aside, fenced, all along.
func TestPollKeepsTheReasonOverTheDeadlinesError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	fenced := errors.New("node 2 is fenced")
	tries := 0
	err := Poll(ctx, time.Millisecond, func(ctx context.Context) (bool, error) {
		if tries++; tries < 3 {
			return false, fenced
		}
		cancel() // the wait's end comes during this try
		return false, ctx.Err()
	})
	var we *WaitError
	if !errors.As(err, &we) || !errors.Is(we.Last, fenced) {
		t.Fatalf("wait ended with %v; want the last reason (%v)", err, fenced)
	}

	// With no earlier reason, the cut try's error is all there is.
	ctx, cancel = context.WithCancel(context.Background())
	err = Poll(ctx, time.Millisecond, func(ctx context.Context) (bool, error) {
		cancel()
		return false, ctx.Err()
	})
	if !errors.As(err, &we) || !errors.Is(we.Last, context.Canceled) {
		t.Fatalf("wait ended with %v; want the only error", err)
	}
}
