package node

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// slowController is an allocate that blocks each call until released (or
// its ctx ends) and then hands out blocks of 100 ids.
type slowController struct {
	calls   atomic.Int32
	entered chan struct{}
	release chan struct{}
}

func newSlowController() *slowController {
	return &slowController{entered: make(chan struct{}, 16), release: make(chan struct{}, 16)}
}

func (s *slowController) allocate(ctx context.Context) (int64, int64, error) {
	n := s.calls.Add(1)
	s.entered <- struct{}{}
	select {
	case <-s.release:
		return int64(n) * 1000, 100, nil
	case <-ctx.Done():
		return 0, 0, ctx.Err()
	}
}

type pidResult struct {
	id  int64
	err error
}

func takeAsync(ctx context.Context, p *producerIDs) <-chan pidResult {
	c := make(chan pidResult, 1)
	go func() {
		id, err := p.take(ctx)
		c <- pidResult{id, err}
	}()
	return c
}

func recvPID(t *testing.T, c <-chan pidResult, what string) pidResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return pidResult{}
	}
}

func waitSignal(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// Callers of InitProducerID arriving while the controller is slow to
// allocate a block wait for that one allocation, each no longer than its
// own context allows: they used to queue on a lock held across the call,
// waiting for it whatever their deadline.
func TestProducerIDCallersShareOneSlowAllocation(t *testing.T) {
	ctrl := newSlowController()
	p := &producerIDs{allocate: ctrl.allocate}
	first := takeAsync(context.Background(), p)
	waitSignal(t, ctrl.entered, "the first caller to ask the controller")

	ctx, cancel := context.WithCancel(context.Background())
	impatient := takeAsync(ctx, p)
	second := takeAsync(context.Background(), p)
	cancel() // its deadline passes while the controller is still slow
	if r := recvPID(t, impatient, "the caller whose context ended to give up"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("caller whose context ended: id %d, err %v; want context.Canceled", r.id, r.err)
	}

	ctrl.release <- struct{}{}
	a, b := recvPID(t, first, "the first caller"), recvPID(t, second, "the second caller")
	if a.err != nil || b.err != nil || a.id == b.id || a.id < 1000 || a.id >= 1100 || b.id < 1000 || b.id >= 1100 {
		t.Fatalf("ids %d (%v) and %d (%v); want two distinct ids of the block [1000, 1100)", a.id, a.err, b.id, b.err)
	}
	if n := ctrl.calls.Load(); n != 1 {
		t.Fatalf("%d calls to the controller; want 1", n)
	}
}

// When the caller that asked the controller gives up, a caller still
// waiting asks again rather than failing with the other's cancellation.
func TestProducerIDWaiterTakesOverAnAbandonedAllocation(t *testing.T) {
	ctrl := newSlowController()
	p := &producerIDs{allocate: ctrl.allocate}
	ctx, cancel := context.WithCancel(context.Background())
	owner := takeAsync(ctx, p)
	waitSignal(t, ctrl.entered, "the first caller to ask the controller")
	waiter := takeAsync(context.Background(), p)
	cancel()
	if r := recvPID(t, owner, "the first caller to give up"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("first caller: id %d, err %v; want context.Canceled", r.id, r.err)
	}
	waitSignal(t, ctrl.entered, "the waiting caller to ask the controller itself")
	ctrl.release <- struct{}{}
	if r := recvPID(t, waiter, "the waiting caller"); r.err != nil || r.id < 2000 || r.id >= 2100 {
		t.Fatalf("waiting caller: id %d, err %v; want an id of the second block", r.id, r.err)
	}
}

// Id 0 is never handed out: it means "not idempotent" to the batch format.
func TestProducerIDSkipsZero(t *testing.T) {
	p := &producerIDs{allocate: func(context.Context) (int64, int64, error) { return 0, 2, nil }}
	if id, err := p.take(context.Background()); err != nil || id != 1 {
		t.Fatalf("first id of the block [0, 2): %d, %v; want 1", id, err)
	}
}
