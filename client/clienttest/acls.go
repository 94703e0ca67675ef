package clienttest

import (
	"fmt"
	"slices"

	"paymentlog/node/acl"
	"paymentlog/wire"
)

// ACL bindings (wire/acls.go), kept by the controller as the real one
// keeps them: created and deleted through the active controller (the
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
	return slices.Clone(c.mu.acls)
}

func (c *Cluster) createACLs(addr string, r *wire.CreateACLsRequest) *wire.CreateACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.CreateACLsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	refuse := func(format string, args ...any) *wire.CreateACLsResponse {
		return &wire.CreateACLsResponse{Err: wire.InvalidRequest, Message: fmt.Sprintf(format, args...), ControllerID: -1}
	}
	if len(r.ACLs) > wire.MaxACLsPerRequest {
		return refuse("%d bindings, more than %d", len(r.ACLs), wire.MaxACLsPerRequest)
	}
	for _, b := range r.ACLs {
		if why := wire.CheckACLBinding(b); why != "" {
			return refuse("binding %s: %s", b, why)
		}
	}
	next := slices.Clone(c.mu.acls)
	created := int32(0)
	for _, b := range r.ACLs {
		if i, found := slices.BinarySearchFunc(next, b, acl.Compare); !found {
			next = slices.Insert(next, i, b)
			created++
		}
	}
	if len(next) > wire.MaxACLs {
		return refuse("the cluster would hold %d bindings, more than %d", len(next), wire.MaxACLs)
	}
	c.mu.acls = next
	if created > 0 {
		c.bumpLocked()
	}
	return &wire.CreateACLsResponse{Created: created, MetadataOffset: c.mu.moff, ControllerID: -1}
}

func (c *Cluster) deleteACLs(addr string, r *wire.DeleteACLsRequest) *wire.DeleteACLsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerAt(addr) != c.mu.controller {
		return &wire.DeleteACLsResponse{Err: wire.NotController, ControllerID: c.mu.controller}
	}
	if len(r.Filters) > wire.MaxACLsPerRequest {
		return &wire.DeleteACLsResponse{Err: wire.InvalidRequest, ControllerID: -1,
			Message: fmt.Sprintf("%d filters, more than %d", len(r.Filters), wire.MaxACLsPerRequest)}
	}
	var kept, deleted []wire.ACLBinding
	for _, b := range c.mu.acls {
		if slices.ContainsFunc(r.Filters, func(f wire.ACLFilter) bool { return f.Matches(b) }) {
			deleted = append(deleted, b)
		} else {
			kept = append(kept, b)
		}
	}
	c.mu.acls = kept
	if len(deleted) > 0 {
		c.bumpLocked()
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
	out := []wire.ACLBinding{}
	for _, b := range c.mu.acls {
		if r.Filter.Matches(b) {
			out = append(out, b)
		}
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
