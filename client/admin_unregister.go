package client

import (
	"context"
	"errors"
	"fmt"

	"paymentlog/wire"
)

// UnregisterBroker removes a decommissioned broker's registration
// (Kafka's Admin.unregisterBroker) through the active controller and waits
// until every alive node that answers has applied it. The broker must be
// fenced (stopped for good), hold no replica (move them first:
// ReassignPartition) and not be a controller; errors match
// wire.InvalidRequest for those, wire.BrokerNotRegistered for an id that is
// not registered, and wire.UnsupportedVersion while an alive broker runs a
// build older than metadata version 3. A retry whose first attempt may have
// been applied (its answer lost) and that then finds the id gone succeeds.
func (a *Admin) UnregisterBroker(ctx context.Context, id int32) error {
	req := &wire.UnregisterBrokerRequest{BrokerID: id}
	var resp wire.UnregisterBrokerResponse
	unsure, err := a.toController(ctx, "unregister broker", wire.TypeUnregisterBroker, req,
		func() any { resp = wire.UnregisterBrokerResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	var we *wire.Error
	if err != nil && unsure && errors.As(err, &we) && we.Code == wire.BrokerNotRegistered {
		return nil
	}
	if err != nil {
		return err
	}
	if err := a.waitMetadataOffset(ctx, resp.MetadataOffset); err != nil {
		return fmt.Errorf("client: broker %d unregistered but not yet applied by every node: %w", id, err)
	}
	return nil
}
