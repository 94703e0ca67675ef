package clienttest

import (
	"errors"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// The ACL bindings and client quotas are decided and applied by the real
// controller's functions (metadata.DecideCreateACLs, DecideDeleteACLs,
// DecideAlterClientQuotas, Image.ApplyEntry) on an image of the fake's
// own, so the fake refuses and keeps exactly what a cluster would.

// policyLocked is the image holding the bindings and quotas.
func (c *Cluster) policyLocked() *metadata.Image {
	if c.mu.policy == nil {
		c.mu.policy = metadata.EmptyImage()
	}
	return c.mu.policy
}

// commitPolicyLocked applies a decision's records (none: nothing changed)
// as one metadata change.
func (c *Cluster) commitPolicyLocked(recs []metadata.Record) error {
	if len(recs) == 0 {
		return nil
	}
	c.mu.policyOffset++
	next, _, err := c.policyLocked().ApplyEntry(c.mu.policyOffset, recs)
	if err != nil {
		return err
	}
	c.mu.policy = next
	c.bumpLocked()
	return nil
}

// decisionError is a decision's refusal as a response's code and message.
func decisionError(err error) (wire.ErrorCode, string) {
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code, we.Message
	}
	return wire.Unknown, err.Error()
}
