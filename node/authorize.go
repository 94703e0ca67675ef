package node

import (
	"fmt"
	"net/netip"
	"slices"

	"paymentlog/node/broker"
	"paymentlog/quic"
	"paymentlog/wire"
)

// Authorizer values (Config.Authorizer, --authorizer).
const (
	// AuthorizerACL enforces the cluster's ACL bindings on client requests.
	AuthorizerACL = "acl"
	// AuthorizerNone lets every client certificate do everything (the
	// default, as before ACLs existed).
	AuthorizerNone = "none"
)

// enforcesACLs reports whether this node enforces ACL bindings.
func (n *Node) enforcesACLs() bool { return n.cfg.Authorizer == AuthorizerACL }

// principalOf is the ACL principal of a client certificate: "User:" and its
// common name.
func principalOf(p quic.Peer) string { return wire.PrincipalPrefix + p.Name }

// superPeer reports whether peer is allowed everything without a binding:
// when this node enforces nothing, when the endpoint authenticates nobody
// (dev mode), for node certificates, and for --super-users.
func (n *Node) superPeer(p quic.Peer) bool {
	return !n.enforcesACLs() || !p.Authenticated || p.Role == quic.RoleNode ||
		slices.Contains(n.cfg.SuperUsers, principalOf(p))
}

// allowed reports whether peer may perform op on the resource, from the
// bindings of the image this node has applied.
func (n *Node) allowed(p quic.Peer, op, resourceType, name string) bool {
	return n.superPeer(p) || n.store.Image().ACLs().Allows(principalOf(p), peerIP(p), op, resourceType, name)
}

// peerIP is the address peer connects from, for bindings with a host (the
// zero Addr if it cannot be read).
func peerIP(p quic.Peer) netip.Addr {
	ap, err := netip.ParseAddrPort(p.Addr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// authorize returns nil when peer may perform op on the resource, else the
// error (TopicAuthorizationFailed, GroupAuthorizationFailed or
// ClusterAuthorizationFailed) naming the principal, the operation and the
// resource, counted in paymentlog_authorization_denied_total.
func (n *Node) authorize(p quic.Peer, op, resourceType, name string) *wire.Error {
	if n.allowed(p, op, resourceType, name) {
		return nil
	}
	return n.refuse(p, op, resourceType, name)
}

// refuse counts a refusal by ACL in paymentlog_authorization_denied_total,
// records it in the audit trail and returns its error.
func (n *Node) refuse(p quic.Peer, op, resourceType, name string) *wire.Error {
	n.denied[resourceIndex(resourceType)].Add(1)
	e := deniedError(p, op, resourceType, name)
	n.audit.Denied(auditWho(p), op, resourceType, name, e.Code.String(), e.Message)
	return e
}

// deniedResources are the resource types of paymentlog_authorization_denied_total,
// in the order of Node.denied.
var deniedResources = [3]string{wire.ResourceTopic, wire.ResourceGroup, wire.ResourceCluster}

// resourceIndex is resourceType's index in deniedResources.
func resourceIndex(resourceType string) int {
	for i, r := range deniedResources {
		if r == resourceType {
			return i
		}
	}
	return 0
}

// deniedError is the error for a refused operation.
func deniedError(p quic.Peer, op, resourceType, name string) *wire.Error {
	code := wire.TopicAuthorizationFailed
	switch resourceType {
	case wire.ResourceGroup:
		code = wire.GroupAuthorizationFailed
	case wire.ResourceCluster:
		code = wire.ClusterAuthorizationFailed
	}
	what := fmt.Sprintf("%s %q", resourceType, name)
	if resourceType == wire.ResourceCluster {
		what = "the cluster"
	}
	return &wire.Error{Code: code, Message: fmt.Sprintf("principal %s may not %s %s (no ACL allows it: `paymentlog acl add --principal %s --operation %s ...`)",
		principalOf(p), op, what, principalOf(p), op)}
}

// describableTopics filters a Metadata answer to the topics peer may
// describe: unnamed ones (every topic was asked for) are left out, named
// ones are answered TopicAuthorizationFailed whether they exist or not (so
// the answer does not tell which names exist).
func (n *Node) describableTopics(p quic.Peer, named bool, topics []wire.TopicMetadata) []wire.TopicMetadata {
	if n.superPeer(p) {
		return topics
	}
	out := topics[:0]
	for _, t := range topics {
		switch {
		case n.allowed(p, wire.OpDescribe, wire.ResourceTopic, t.Name):
			out = append(out, t)
		case named:
			out = append(out, wire.TopicMetadata{Err: n.refuse(p, wire.OpDescribe, wire.ResourceTopic, t.Name).Code, Name: t.Name})
		}
	}
	return out
}

// describableOffsets filters a group's offsets to the topics peer may
// describe.
func (n *Node) describableOffsets(p quic.Peer, offsets []wire.GroupOffset) []wire.GroupOffset {
	return describable(n, p, wire.ResourceTopic, offsets, func(o wire.GroupOffset) string { return o.Topic })
}

// describableGroups filters a group list to the groups peer may describe.
func (n *Node) describableGroups(p quic.Peer, groups []wire.GroupSummary) []wire.GroupSummary {
	return describable(n, p, wire.ResourceGroup, groups, func(g wire.GroupSummary) string { return g.Group })
}

// describable keeps the items whose resource (of type resourceType, named
// by name) peer may describe, in place.
func describable[T any](n *Node, p quic.Peer, resourceType string, items []T, name func(T) string) []T {
	if n.superPeer(p) {
		return items
	}
	out := items[:0]
	for _, it := range items {
		if n.allowed(p, wire.OpDescribe, resourceType, name(it)) {
			out = append(out, it)
		}
	}
	return out
}

// authorizeCommit: read on the group and on every topic committed.
func (n *Node) authorizeCommit(p quic.Peer, req wire.OffsetCommitRequest) *wire.Error {
	if e := n.authorize(p, wire.OpRead, wire.ResourceGroup, req.Group); e != nil {
		return e
	}
	for _, o := range req.Offsets {
		if e := n.authorize(p, wire.OpRead, wire.ResourceTopic, o.Topic); e != nil {
			return e
		}
	}
	return nil
}

// authorizeHeartbeat: read on the group and describe on every topic named
// in the subscription. A pattern subscription's topics are not checked
// here (the controller resolves the pattern): fetching and committing an
// assigned topic the member may not read is refused.
func (n *Node) authorizeHeartbeat(p quic.Peer, req wire.GroupHeartbeatRequest) *wire.Error {
	if e := n.authorize(p, wire.OpRead, wire.ResourceGroup, req.Group); e != nil {
		return e
	}
	for _, t := range req.Topics {
		if e := n.authorize(p, wire.OpDescribe, wire.ResourceTopic, t); e != nil {
			return e
		}
	}
	return nil
}

// topicAuthorizer is the broker's check of Produce, Fetch, ListOffsets,
// DescribeReplica and DescribeProducers, which also records the reads and writes it allows in
// the audit trail (access lines); nil (nothing to do on the data path)
// when this node neither enforces ACLs nor records access.
func (n *Node) topicAuthorizer() broker.Authorize {
	acls, access := n.enforcesACLs(), n.audit.RecordsAccess()
	if !acls && !access {
		return nil
	}
	return func(p quic.Peer, op, topic string) *wire.Error {
		if acls {
			if e := n.authorize(p, op, wire.ResourceTopic, topic); e != nil {
				return e
			}
		}
		if access && (op == wire.OpRead || op == wire.OpWrite) {
			n.audit.Access(auditWho(p), op, topic)
		}
		return nil
	}
}

// authorizerName describes the authorization in force, for the start log.
func (n *Node) authorizerName() string {
	switch {
	case n.cfg.TLSDir == "":
		return "none (dev mode: nothing authenticated)"
	case n.enforcesACLs():
		return fmt.Sprintf("acl (super users %v)", n.cfg.SuperUsers)
	}
	return "none (every client certificate may do everything)"
}
