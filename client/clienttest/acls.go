package clienttest

import (
	"slices"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// ACL bindings (wire/acls.go), kept as the real controller keeps them
// (policy.go): created and deleted through the active controller (the
// others answer NotController with the hint), each change a metadata
// change; described by any node. The fake enforces none of them: the
// answers' Enforced is what SetACLsEnforced set. Refusals a node would
// answer for want of a permission are injected with Refuse.

// SetACLsEnforced sets what DescribeACLs answers say about enforcement.
func (c *Cluster) SetACLsEnforced(on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.aclsEnforced = on
}

// ACLs returns the cluster's bindings, sorted as DescribeACLs sorts them.
func (c *Cluster) ACLs() []wire.ACLBinding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.policyLocked().ACLs().Bindings())
}

func (c *Cluster) createACLs(addr string, r *wire.CreateACLsRequest) *wire.CreateACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.CreateACLsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	recs, created, err := metadata.DecideCreateACLs(c.policyLocked(), r.ACLs)
	if err == nil {
		err = c.commitPolicyLocked(recs)
	}
	if err != nil {
		code, msg := decisionError(err)
		return &wire.CreateACLsResponse{Err: code, Message: msg, ControllerID: -1}
	}
	return &wire.CreateACLsResponse{Created: int32(created), MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) deleteACLs(addr string, r *wire.DeleteACLsRequest) *wire.DeleteACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.DeleteACLsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	recs, deleted, err := metadata.DecideDeleteACLs(c.policyLocked(), r.Filters)
	if err == nil {
		err = c.commitPolicyLocked(recs)
	}
	if err != nil {
		code, msg := decisionError(err)
		return &wire.DeleteACLsResponse{Err: code, Message: msg, ControllerID: -1}
	}
	if deleted == nil {
		deleted = []wire.ACLBinding{}
	}
	return &wire.DeleteACLsResponse{Deleted: deleted, MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) describeACLs(r *wire.DescribeACLsRequest) *wire.DescribeACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if why := wire.CheckACLFilter(r.Filter); why != "" {
		return &wire.DescribeACLsResponse{Err: wire.InvalidRequest, Message: why}
	}
	out := c.policyLocked().ACLs().Select(r.Filter)
	if out == nil {
		out = []wire.ACLBinding{}
	}
	return &wire.DescribeACLsResponse{ACLs: out, Enforced: c.mu.aclsEnforced, MetadataOffset: c.mu.moff}
}

// HideTopic makes every node answer Metadata as a node enforcing ACLs
// answers a client that may not describe the topic (or no longer, with
// hidden false): an answer for every topic leaves it out, one naming it
// answers TopicAuthorizationFailed for it (whether it exists or not).
// Nothing else is refused.
func (c *Cluster) HideTopic(name string, hidden bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.hidden == nil {
		c.mu.hidden = map[string]bool{}
	}
	c.mu.hidden[name] = hidden
	c.bumpLocked()
}
