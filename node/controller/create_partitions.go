package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// CreatePartitions raises a topic's partition count once the new
// partitions' records are committed (see metadata.DecideCreatePartitions).
// The decision is made in the loop against the image that holds every
// committed entry (a new controller's marker is applied first), so a
// request retried after a controller failover finds the partitions its
// first attempt created and is refused ("already has N partitions")
// instead of creating them again; the answer's Count lets the client tell.
func (c *Controller) CreatePartitions(ctx context.Context, req wire.CreatePartitionsRequest) wire.CreatePartitionsResponse {
	ev := metadata.CreatePartitionsEvent{Name: req.Name, Count: req.Count, Seed: c.cfg.Rand()}
	img, err := c.submit(ctx, "create-partitions", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideCreatePartitions(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.CreatePartitionsResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		if t, ok := img.Topic(req.Name); ok {
			r.TopicID, r.Count = t.ID, int32(len(t.Partitions))
		}
		if err == nil {
			r.MetadataOffset = int64(img.Offset())
		}
	}
	return r
}
