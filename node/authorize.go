package node

import (
	"fmt"
	"slices"

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
	return n.superPeer(p) || n.store.Image().ACLs().Allows(principalOf(p), op, resourceType, name)
}

// authorize returns nil when peer may perform op on the resource, else the
// error (TopicAuthorizationFailed, GroupAuthorizationFailed or
// ClusterAuthorizationFailed) naming the principal, the operation and the
// resource.
func (n *Node) authorize(p quic.Peer, op, resourceType, name string) *wire.Error {
	if n.allowed(p, op, resourceType, name) {
		return nil
	}
	return deniedError(p, op, resourceType, name)
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
