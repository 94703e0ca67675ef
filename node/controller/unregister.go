package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// UnregisterBroker removes a decommissioned broker's registration once the
// record is committed (see metadata.DecideUnregisterBroker), then drops its
// session and, in the background, its raft learner.
func (c *Controller) UnregisterBroker(ctx context.Context, req wire.UnregisterBrokerRequest) wire.UnregisterBrokerResponse {
	ev := metadata.UnregisterBrokerEvent{ID: req.BrokerID}
	img, err := c.submit(ctx, "unregister-broker", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideUnregisterBroker(m, ev)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.UnregisterBrokerResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	if err == nil {
		c.log.Info("unregistered broker", "broker", req.BrokerID)
		c.mu.Lock()
		c.mu.sessions.forget(req.BrokerID)
		c.mu.Unlock()
		c.kickLearners()
	}
	return r
}
