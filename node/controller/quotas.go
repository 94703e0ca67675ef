package controller

import (
	"context"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// AlterClientQuotas changes client quotas once the record is committed
// (see metadata.DecideAlterClientQuotas); a change that changes nothing (a
// retry) commits nothing and succeeds.
func (c *Controller) AlterClientQuotas(ctx context.Context, req wire.AlterClientQuotasRequest) wire.AlterClientQuotasResponse {
	img, err := c.submit(ctx, "alter-client-quotas", func(m *metadata.Image) ([]metadata.Record, error) {
		return metadata.DecideAlterClientQuotas(m, req.Entries)
	})
	code, msg, hint := c.errorCode(err)
	r := wire.AlterClientQuotasResponse{Err: code, Message: msg, ControllerID: hint}
	if img != nil {
		r.MetadataOffset = int64(img.Offset())
	}
	if err == nil {
		c.log.Info("altered client quotas", "entries", len(req.Entries))
	}
	return r
}
