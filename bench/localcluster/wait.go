package localcluster

import (
	"context"
	"fmt"
	"time"
)

// Cond is a condition polled by WaitFor. An error means "not yet" (it is kept
// and reported if the wait times out), not "give up".
type Cond func(ctx context.Context) (bool, error)

// WaitError is returned when a wait's context ends before its condition holds.
type WaitError struct {
	Err  error // the context's error
	Last error // the condition's last error, if any
}

func (e *WaitError) Error() string {
	if e.Last != nil {
		return fmt.Sprintf("localcluster: wait: %v (last: %v)", e.Err, e.Last)
	}
	return fmt.Sprintf("localcluster: wait: %v", e.Err)
}

func (e *WaitError) Unwrap() error { return e.Err }

// Poll calls cond every interval until it returns true or ctx ends.
func Poll(ctx context.Context, interval time.Duration, cond Cond) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		// An error of a call that ctx's end cut short (every node "deadline
		// exceeded") does not hide the reason the earlier tries gave.
		if err != nil && (last == nil || ctx.Err() == nil) {
			last = err
		}
		select {
		case <-ctx.Done():
			return &WaitError{Err: ctx.Err(), Last: last}
		case <-t.C:
		}
	}
}

// WaitFor polls cond every Options.PollInterval until it holds. If ctx has no
// deadline, Options.WaitTimeout applies.
func (c *Cluster) WaitFor(ctx context.Context, cond Cond) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.WaitTimeout)
		defer cancel()
	}
	return Poll(ctx, c.opts.PollInterval, cond)
}
