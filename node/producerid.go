package node

import (
	"context"
	"errors"
	"sync"

	"paymentlog/wire"
)

// producerIDs hands out producer ids from blocks the active controller
// allocates to this broker (each block is a committed metadata record, so ids
// are unique across the cluster and across controller changes).
//
// When the block runs out, one caller asks the controller for the next and
// every caller arriving meanwhile waits for that same allocation, each only
// as long as its own ctx allows. No lock is held across the call: callers
// used to queue on a mutex held across it, each waiting, whatever its own
// deadline, for every call ahead of it, and after a failed call the next in
// line made the same slow call again.
type producerIDs struct {
	// allocate asks the controller for a block: ids [start, start+n).
	allocate func(ctx context.Context) (start, n int64, err error)

	mu struct {
		sync.Mutex
		next, end int64          // [next, end) is what is left of the current block
		inflight  *pidAllocation // the allocation under way, nil if none
	}
}

// pidAllocation is one call to allocate, shared by the callers waiting for it.
type pidAllocation struct {
	done chan struct{} // closed when the call has returned; then:
	err  error
	// ownerGone: the call failed because the ctx of the caller that made it
	// ended; the callers waiting on it make their own.
	ownerGone bool
}

// take returns a fresh cluster-unique producer id.
func (p *producerIDs) take(ctx context.Context) (int64, error) {
	for {
		p.mu.Lock()
		if p.mu.next < p.mu.end {
			id := p.mu.next
			p.mu.next++
			p.mu.Unlock()
			if id == 0 {
				// The first block starts at 0, but a zero ProducerID means
				// "not idempotent" to segment.BuilderOptions (stored as -1):
				// a producer given id 0 would write batches without sequence
				// numbers, and its retries would be duplicated and reordered
				// (found by e2e chaos).
				continue
			}
			return id, nil
		}
		a := p.mu.inflight
		if a == nil {
			a = &pidAllocation{done: make(chan struct{})}
			p.mu.inflight = a
			p.mu.Unlock()
			if err := p.run(ctx, a); err != nil {
				return 0, err
			}
			continue
		}
		p.mu.Unlock()
		select {
		case <-a.done:
			if a.err != nil && !a.ownerGone {
				return 0, a.err
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// errEmptyBlock: the controller answered an allocation with no ids.
var errEmptyBlock = errors.New("node: controller allocated an empty producer id block")

// run makes allocation a, under ctx, and installs the block it brings.
func (p *producerIDs) run(ctx context.Context, a *pidAllocation) error {
	start, n, err := p.allocate(ctx)
	if err == nil && n <= 0 {
		err = errEmptyBlock
	}
	p.mu.Lock()
	if err == nil {
		p.mu.next, p.mu.end = start, start+n
	}
	p.mu.inflight = nil
	p.mu.Unlock()
	a.err, a.ownerGone = err, err != nil && ctx.Err() != nil
	close(a.done)
	return err
}

// nextProducerID returns a fresh cluster-unique producer id.
func (n *Node) nextProducerID(ctx context.Context) (int64, error) {
	return n.pids.take(ctx)
}

// allocateProducerIDs asks the active controller for a block of producer ids.
func (n *Node) allocateProducerIDs(ctx context.Context) (start, count int64, err error) {
	var resp wire.AllocateProducerIDsResponse
	err = n.callController(ctx, wire.TypeAllocateProducerIDs, wire.AllocateProducerIDsRequest{
		BrokerID: n.cfg.ID, Incarnation: n.incarnation,
	}, &resp, func() wire.ErrorCode { return resp.Err })
	if err != nil {
		return 0, 0, err
	}
	return resp.Start, resp.Len, nil
}
