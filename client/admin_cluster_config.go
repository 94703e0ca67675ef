package client

import (
	"context"
	"fmt"

	"paymentlog/wire"
)

// AlterClusterConfigs changes the cluster configs (ConfigChange's Set and
// Delete; the keys: wire.AlterClusterConfigsRequest's) through the active
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

// waitMetadataOffset waits until every alive node that answers (at least
// one) has applied metadata offset off, or ctx ends.
func (a *Admin) waitMetadataOffset(ctx context.Context, off int64) error {
	return a.untilEveryNode(ctx, func(ctx context.Context, addr string) func() bool {
		var r wire.DescribeClusterResponse
		if err := a.c.call(ctx, addr, wire.TypeDescribeCluster, &wire.DescribeClusterRequest{}, &r); err != nil || r.Err != wire.None {
			return nil
		}
		return func() bool { return r.MetadataOffset >= off }
	})
}
