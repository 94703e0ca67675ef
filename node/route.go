package node

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"paymentlog/quic"
	"paymentlog/wire"
)

// controllerIDs returns the controllers to try, the believed active
// controller first.
func (n *Node) controllerIDs() []int32 {
	leader := int32(n.raft.Status().Leader)
	var out []int32
	if _, ok := n.cfg.Controllers[leader]; ok {
		out = append(out, leader)
	}
	ids := make([]int, 0, len(n.cfg.Controllers))
	for id := range n.cfg.Controllers {
		if id != leader {
			ids = append(ids, int(id))
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		out = append(out, int32(id))
	}
	return out
}

// callController sends a request to the active controller, trying each
// controller in turn while the answer is NotController or the call fails.
// Under mutual TLS a controller counts only if its certificate is that
// controller's node certificate (quic.ExpectNode). code reads the response's
// error code after a successful call.
func (n *Node) callController(ctx context.Context, t quic.FrameType, req, resp any, code func() wire.ErrorCode) error {
	var last error = errors.New("no controllers configured")
	for _, id := range n.controllerIDs() {
		if ctx.Err() != nil {
			break
		}
		addr := n.cfg.Controllers[id]
		if err := n.ep.Call(quic.ExpectNode(ctx, id), addr, t, req, resp); err != nil {
			last = fmt.Errorf("controller %s: %w", addr, err)
			continue
		}
		c := code()
		if c == wire.NotController {
			last = c.Err("at " + addr)
			continue
		}
		if c != wire.None {
			return c.Err("")
		}
		return nil
	}
	return last
}

// alterPartition routes a leader's ISR change to the active controller.
func (n *Node) alterPartition(ctx context.Context, req wire.AlterPartitionRequest) (wire.AlterPartitionResponse, error) {
	var resp wire.AlterPartitionResponse
	err := n.callController(ctx, wire.TypeAlterPartition, req, &resp, func() wire.ErrorCode { return resp.Err })
	var we *wire.Error
	if errors.As(err, &we) {
		// A definite answer from the controller (e.g. a stale epoch): pass it on.
		resp.Err = we.Code
		return resp, nil
	}
	return resp, err
}
