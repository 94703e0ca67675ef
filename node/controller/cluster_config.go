package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// AlterClusterConfigs changes the cluster configs once the record is
// committed (see metadata.DecideAlterClusterConfigs).
func (c *Controller) AlterClusterConfigs(ctx context.Context, req wire.AlterClusterConfigsRequest) wire.AlterClusterConfigsResponse {
	ev := metadata.AlterClusterConfigsEvent{Set: req.Set, Delete: req.Delete}
	img, err := c.submit(ctx, "alter-cluster-configs", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideAlterClusterConfigs(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.AlterClusterConfigsResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	return r
}
