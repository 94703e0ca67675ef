package node

import (
	"context"

	"paymentlog/wire"
)

// producerIDs hands out producer ids from blocks the active controller
// allocates to this broker (each block is a committed metadata record, so ids
// are unique across the cluster and across controller changes).
type producerIDs struct {
	next, end int64 // [next, end) is what is left of the current block
}

// nextProducerID returns a fresh cluster-unique producer id.
func (n *Node) nextProducerID(ctx context.Context) (int64, error) {
	n.pidMu.Lock()
	defer n.pidMu.Unlock()
	return n.nextProducerIDLocked(ctx)
}

func (n *Node) nextProducerIDLocked(ctx context.Context) (int64, error) {
	if n.pids.next >= n.pids.end {
		var resp wire.AllocateProducerIDsResponse
		err := n.callController(ctx, wire.TypeAllocateProducerIDs, wire.AllocateProducerIDsRequest{
			BrokerID: n.cfg.ID, Incarnation: n.incarnation,
		}, &resp, func() wire.ErrorCode { return resp.Err })
		if err != nil {
			return 0, err
		}
		n.pids = producerIDs{next: resp.Start, end: resp.Start + resp.Len}
	}
	id := n.pids.next
	n.pids.next++
	if id == 0 {
		// The first block starts at 0, but a zero ProducerID means "not
		// idempotent" to segment.BuilderOptions (stored as -1): a producer
		// given id 0 would write batches without sequence numbers, and its
		// retries would be duplicated and reordered (found by e2e chaos).
		return n.nextProducerIDLocked(ctx)
	}
	return id, nil
}
