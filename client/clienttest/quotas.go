package clienttest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"paymentlog/wire"
)

// Client quotas (wire/quotas.go), kept by the controller as the real one
// keeps them: altered through the active controller (the others answer
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
	out := make([]wire.ClientQuota, 0, len(c.mu.quotas))
	for _, p := range slices.Sorted(maps.Keys(c.mu.quotas)) {
		out = append(out, wire.ClientQuota{Principal: p, Values: maps.Clone(c.mu.quotas[p])})
	}
	return out
}

func (c *Cluster) alterClientQuotas(addr string, r *wire.AlterClientQuotasRequest) *wire.AlterClientQuotasResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.AlterClientQuotasResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	refuse := func(format string, args ...any) *wire.AlterClientQuotasResponse {
		return &wire.AlterClientQuotasResponse{Err: wire.InvalidRequest, Message: fmt.Sprintf(format, args...), ControllerID: -1}
	}
	if len(r.Entries) > wire.MaxACLsPerRequest {
		return refuse("%d entries, more than %d", len(r.Entries), wire.MaxACLsPerRequest)
	}
	next := make(map[string]map[string]int64, len(c.mu.quotas))
	for p, vs := range c.mu.quotas {
		next[p] = maps.Clone(vs)
	}
	seen := map[string]bool{}
	for _, e := range r.Entries {
		if why := wire.CheckQuotaEntry(e); why != "" {
			return refuse("%s", why)
		}
		if seen[e.Principal] {
			return refuse("quota of %s: named twice", wire.QuotaEntityName(e.Principal))
		}
		seen[e.Principal] = true
		vs := next[e.Principal]
		if vs == nil {
			vs = map[string]int64{}
		}
		maps.Copy(vs, e.Set)
		for _, k := range e.Delete {
			delete(vs, k)
		}
		if len(vs) == 0 {
			delete(next, e.Principal)
		} else {
			next[e.Principal] = vs
		}
	}
	if len(next) > wire.MaxQuotaEntities {
		return refuse("the cluster would hold quotas of %d entities, more than %d", len(next), wire.MaxQuotaEntities)
	}
	changed := len(next) != len(c.mu.quotas)
	for p, vs := range next {
		if !maps.Equal(vs, c.mu.quotas[p]) {
			changed = true
		}
	}
	c.mu.quotas = next
	if changed {
		c.bumpLocked()
	}
	return &wire.AlterClientQuotasResponse{MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) describeClientQuotas() *wire.DescribeClientQuotasResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	return &wire.DescribeClientQuotasResponse{Quotas: c.clientQuotasLocked(), MetadataOffset: c.mu.moff}
}
