package quic

import (
	"context"
	"sync"
)

// Each Call goes on a stream of its own, and Calls made one after the other
// from different goroutines may open their streams and write their requests
// in the other order: the server then reads (and serves) them in that
// order. A caller whose requests must arrive in the order it made them (an
// idempotent producer's batches of one partition: a batch that arrives
// before the one its sequence follows waits at the leader, or is refused)
// chains them with WriteAfter: each Call opens its stream and writes its
// request only once the previous one in the chain has written its request
// (or failed, or ended), so the streams carry the requests in chain order.
// Their answers still come as they come. A Call waits at most until its own
// context ends.

// writeTurn is a Call's place in a chain (see WriteAfter).
type writeTurn struct {
	prev <-chan struct{} // closed when the previous Call's request is written; nil: first
	done chan struct{}   // closed when this Call's request is written, or it gave up
	once sync.Once
}

type writeTurnKey struct{}

// WriteAfter returns ctx for a Call that writes its request only after the
// Call whose WriteAfter returned prev has written its own (prev nil: at
// once), and the channel that the Call closes once its request is written
// or the Call ends without writing it (pass it as the next Call's prev).
// Make the Call with the returned context: nothing else closes the channel.
func WriteAfter(ctx context.Context, prev <-chan struct{}) (context.Context, <-chan struct{}) {
	t := &writeTurn{prev: prev, done: make(chan struct{})}
	return context.WithValue(ctx, writeTurnKey{}, t), t.done
}

// turnOf returns ctx's place in a chain, or nil.
func turnOf(ctx context.Context) *writeTurn {
	t, _ := ctx.Value(writeTurnKey{}).(*writeTurn)
	return t
}

// wait blocks until the previous Call in the chain has written its request,
// or ctx ends (the Call then fails with ctx's error). nil t: no wait.
func (t *writeTurn) wait(ctx context.Context) error {
	if t == nil || t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// written lets the next Call in the chain write. Idempotent; nil t: no-op.
func (t *writeTurn) written() {
	if t != nil {
		t.once.Do(func() {
			if turnWrittenHook != nil {
				turnWrittenHook(t)
			}
			close(t.done)
		})
	}
}

// turnWrittenHook, when set (package tests only), sees each turn as it is
// released.
var turnWrittenHook func(*writeTurn)
