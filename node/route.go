package node

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"paymentlog/quic"
	"paymentlog/wire"
)

// controllerAddrs returns controller addresses to try, the believed active
// controller first.
func (n *Node) controllerAddrs() []string {
	leader := int32(n.raft.Status().Leader)
	var out []string
	if a, ok := n.cfg.Controllers[leader]; ok {
		out = append(out, a)
	}
	ids := make([]int, 0, len(n.cfg.Controllers))
	for id := range n.cfg.Controllers {
		if id != leader {
			ids = append(ids, int(id))
		}
	}
	sort.Ints(ids)
	for _, id := range ids {
		out = append(out, n.cfg.Controllers[int32(id)])
	}
	return out
}

// callController sends a request to the active controller, trying each
// controller in turn while the answer is NotController or the call fails.
// code reads the response's error code after a successful call.
func (n *Node) callController(ctx context.Context, t quic.FrameType, req, resp any, code func() wire.ErrorCode) error {
	var last error = errors.New("no controllers configured")
	for _, addr := range n.controllerAddrs() {
		if ctx.Err() != nil {
			break
		}
		if err := n.ep.Call(ctx, addr, t, req, resp); err != nil {
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
