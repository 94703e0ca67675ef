package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// ReassignPartition starts, replaces or cancels a partition's reassignment
// once its record is committed (see metadata.DecideReassign). The decision
// is made in the loop against the image holding every committed entry, so
// a request retried after a controller failover finds its first attempt's
// change in place and is answered with no new record.
func (c *Controller) ReassignPartition(ctx context.Context, req wire.ReassignPartitionRequest) wire.ReassignPartitionResponse {
	ev := metadata.ReassignEvent{Topic: req.Topic, Partition: req.Partition, Target: req.Replicas, Cancel: req.Cancel}
	img, err := c.submit(ctx, "reassign-partition", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideReassign(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.ReassignPartitionResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		if p, ok := img.Partition(req.Topic, req.Partition); ok {
			r.Partition = p.PartitionMetadata()
		}
	}
	return r
}
