package clienttest

import (
	"context"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// Client quotas (wire/quotas.go), kept as the real controller keeps them
// (policy.go): altered through the active controller (the others answer
// NotController with the hint), each change that changes something a
// metadata change; described by any node. The fake meters nothing:
// SetThrottle makes every Produce or Fetch answer come late and say so, as
// a node's answers to a principal over its quota do. Refusals a node would
// answer for want of a permission are injected with Refuse.

// ClientQuotas returns the cluster's quotas as DescribeClientQuotas
// answers them: the default ("") first, then by principal.
func (c *Cluster) ClientQuotas() []wire.ClientQuota {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientQuotasLocked()
}

// SetThrottle makes every later Produce (Fetch) answer wait produce
// (fetch) before it is handled and carry it as ThrottleMs; 0 throttles
// none.
func (c *Cluster) SetThrottle(produce, fetch time.Duration) {
	c.throttle[0].Store(int64(produce))
	c.throttle[1].Store(int64(fetch))
}

// holdBack waits out SetThrottle's delay of kind (0 produce, 1 fetch) and
// returns it in ms.
func (c *Cluster) holdBack(ctx context.Context, kind int) int32 {
	d := time.Duration(c.throttle[kind].Load())
	if d <= 0 {
		return 0
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
	return int32(d / time.Millisecond)
}

func (c *Cluster) clientQuotasLocked() []wire.ClientQuota {
	out := c.policyLocked().ClientQuotas()
	if out == nil {
		out = []wire.ClientQuota{}
	}
	return out
}

func (c *Cluster) alterClientQuotas(addr string, r *wire.AlterClientQuotasRequest) *wire.AlterClientQuotasResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.AlterClientQuotasResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	recs, err := metadata.DecideAlterClientQuotas(c.policyLocked(), r.Entries)
	if err == nil {
		err = c.commitPolicyLocked(recs)
	}
	if err != nil {
		code, msg := decisionError(err)
		return &wire.AlterClientQuotasResponse{Err: code, Message: msg, ControllerID: -1}
	}
	return &wire.AlterClientQuotasResponse{MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) describeClientQuotas() *wire.DescribeClientQuotasResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &wire.DescribeClientQuotasResponse{Quotas: c.clientQuotasLocked(), MetadataOffset: c.mu.moff}
}
