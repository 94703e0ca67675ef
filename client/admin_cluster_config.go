package client

import (
	"context"
	"fmt"
	"sync"
	"time"

	"paymentlog/wire"
)

// AlterClusterConfigs changes the cluster configs (ConfigChange's Set and
// Delete; the key: reassignment.throttle.bytes) through the active
// controller, and waits until every alive node that answers has applied
// the change. Unknown keys and bad values are refused whole with an error
// matching wire.InvalidConfig; a change that changes nothing succeeds.
func (a *Admin) AlterClusterConfigs(ctx context.Context, ch ConfigChange) error {
	req := &wire.AlterClusterConfigsRequest{Set: ch.Set, Delete: ch.Delete}
	var resp wire.AlterClusterConfigsResponse
	_, err := a.toController(ctx, "alter cluster configs", wire.TypeAlterClusterConfigs, req,
		func() any { resp = wire.AlterClusterConfigsResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil {
		return err
	}
	if err := a.waitMetadataOffset(ctx, resp.MetadataOffset); err != nil {
		return fmt.Errorf("client: cluster configs changed but not yet applied by every node: %w", err)
	}
	return nil
}

// waitMetadataOffset polls every alive node's DescribeCluster until each
// that answers (at least one) has applied metadata offset off, or ctx ends.
func (a *Admin) waitMetadataOffset(ctx context.Context, off int64) error {
	backoff := 20 * time.Millisecond
	for {
		snap, err := a.c.meta.get(ctx)
		if err != nil {
			return err
		}
		var addrs []string
		for _, b := range snap.brokerList() {
			if b.State != "fenced" && b.Addr != "" {
				addrs = append(addrs, b.Addr)
			}
		}
		if len(addrs) == 0 {
			addrs = a.c.cfg.Bootstrap
		}
		answered, behind := 0, 0
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, addr := range addrs {
			wg.Go(func() {
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				defer cancel()
				var r wire.DescribeClusterResponse
				if err := a.c.call(cctx, addr, wire.TypeDescribeCluster, &wire.DescribeClusterRequest{}, &r); err != nil || r.Err != wire.None {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				answered++
				if r.MetadataOffset < off {
					behind++
				}
			})
		}
		wg.Wait()
		if answered > 0 && behind == 0 {
			return nil
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}
