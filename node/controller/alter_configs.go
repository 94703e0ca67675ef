package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// AlterConfigs changes a topic's configs and min ISR once the change is
// committed (see metadata.DecideAlterConfigs). With
// unclean.leader.election.enable turned on, the same entry elects a leader
// for each offline partition of the topic that has a live replica.
func (c *Controller) AlterConfigs(ctx context.Context, req wire.AlterConfigsRequest) wire.AlterConfigsResponse {
	ev := metadata.AlterConfigsEvent{Topic: req.Topic, Set: req.Set, Delete: req.Delete}
	img, err := c.submit(ctx, "alter-configs", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideAlterConfigs(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.AlterConfigsResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil && err == nil {
		r.MetadataOffset = int64(img.Offset())
	}
	return r
}
