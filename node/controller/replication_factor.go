package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// AlterReplicationFactor changes a topic's replication factor once its
// records are committed (see metadata.DecideReplicationFactor): the
// partitions' reassignments to the new size have then started. A request
// retried after a controller failover finds its first attempt in place and
// is answered with no new record.
func (c *Controller) AlterReplicationFactor(ctx context.Context, req wire.AlterReplicationFactorRequest) wire.AlterReplicationFactorResponse {
	ev := metadata.ReplicationFactorEvent{Topic: req.Topic, RF: req.ReplicationFactor, Assignment: req.Assignment}
	img, err := c.submit(ctx, "alter-replication-factor", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideReplicationFactor(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.AlterReplicationFactorResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		if t, ok := img.Topic(req.Topic); ok {
			r.ReplicationFactor = t.RF
		}
	}
	return r
}
