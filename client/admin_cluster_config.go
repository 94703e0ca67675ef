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
	// Cluster configs take effect in each node's broker, which is brought
	// in line with the metadata image a moment after the image has it.
	if err := a.waitOffset(ctx, resp.MetadataOffset, true); err != nil {
		return fmt.Errorf("client: cluster configs changed but not yet applied by every node: %w", err)
	}
	return nil
}

// waitBrokersTook waits, after a topic's partitions appeared with leaders in
// every node's metadata, until every node's broker has also taken them
// (opened its replicas' logs, the leaders among them ready for produce
// and fetch) as of metadata offset off. Off 0 (a retried call refused
// because its earlier attempt made the change, or a controller of an older
// build) stands for the offset a node's image is at now: every node's image
// already had the change, so that is at or past it.
func (a *Admin) waitBrokersTook(ctx context.Context, off int64) error {
	if off <= 0 {
		st, err := a.DescribeCluster(ctx)
		if err != nil {
			return err
		}
		off = st.MetadataOffset
	}
	return a.waitOffset(ctx, off, true)
}

// waitMetadataOffset waits until every alive node that answers (at least
// one) has applied metadata offset off to its image (what ACLs, quotas and
// registrations are read from), or ctx ends.
func (a *Admin) waitMetadataOffset(ctx context.Context, off int64) error {
	return a.waitOffset(ctx, off, false)
}

// waitOffset waits until every alive node that answers (at least one) has
// applied metadata offset off to its image and, with broker set, to its
// broker (DescribeClusterResponse.BrokerOffset; a node of an older build
// that does not send it counts by its image), or ctx ends.
func (a *Admin) waitOffset(ctx context.Context, off int64, broker bool) error {
	return a.untilEveryNode(ctx, func(ctx context.Context, addr string) func() bool {
		var r wire.DescribeClusterResponse
		if err := a.c.call(ctx, addr, wire.TypeDescribeCluster, &wire.DescribeClusterRequest{}, &r); err != nil || r.Err != wire.None {
			return nil
		}
		return func() bool {
			return r.MetadataOffset >= off && (!broker || r.BrokerOffset == nil || *r.BrokerOffset >= off)
		}
	})
}
