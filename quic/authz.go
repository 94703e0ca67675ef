package quic

import (
	"errors"
	"fmt"
)

// ErrClusterAuthorizationFailed matches (errors.Is) a *RemoteError with
// CodeClusterAuthorizationFailed: the peer's certificate may not send that
// request, or not as the node it names. Not retriable: the same certificate
// gets the same answer.
var ErrClusterAuthorizationFailed = errors.New("quic: cluster authorization failed")

// Authorizer decides, before its handler runs, whether peer may open a stream
// whose first frame has type t. It returns nil to allow, else the error sent
// back to the peer (use ClusterAuthorizationError). An endpoint consults it
// only under mutual TLS: in dev mode nothing is authenticated, so nothing is
// authorized either (permissive, and warned about at start).
type Authorizer func(peer Peer, t FrameType) error

// NodeOnly returns an Authorizer that admits the frame types listed only from
// peers holding a node certificate (Kafka's ClusterAction) and every other
// type from any peer the handshake accepted.
func NodeOnly(types ...FrameType) Authorizer {
	var nodeOnly [256]bool
	for _, t := range types {
		nodeOnly[t] = true
	}
	return func(p Peer, t FrameType) error {
		if !nodeOnly[t] || p.Role == RoleNode {
			return nil
		}
		return ClusterAuthorizationError("frame type %d is node-to-node and %q holds a %s; nodes need a node certificate (`paymentlog cert issue --name NAME --node-id N`)",
			uint8(t), p.Name, p.Identity())
	}
}

// ClusterAuthorizationError is the error a handler or Authorizer returns to
// refuse a request with CodeClusterAuthorizationFailed.
func ClusterAuthorizationError(format string, args ...any) error {
	return &RemoteError{Code: CodeClusterAuthorizationFailed, Message: "cluster authorization failed: " + fmt.Sprintf(format, args...)}
}

// Identity is the peer's certificate identity.
func (p Peer) Identity() Identity { return Identity{Role: p.Role, NodeID: p.NodeID} }

// CheckNodeID returns nil when p may act as node id: when its certificate is
// a node certificate for id, or when the endpoint authenticates nobody (dev
// mode: p.Authenticated is false). Handlers call it where a request names
// the node it comes from (a broker id, a raft sender, a follower id), after
// the Authorizer has admitted the frame type. A refusal is reported to the
// endpoint's Config.OnRefusedPeer, reason RefusedWrongNode.
func (p Peer) CheckNodeID(what string, id int32) error {
	if !p.Authenticated || (p.Role == RoleNode && p.NodeID == id) {
		return nil
	}
	err := ClusterAuthorizationError("%s %d does not match the peer's certificate %q (%s)", what, id, p.Name, p.Identity())
	if p.ep != nil {
		p.ep.refusedWrongNode(SideInbound, p.Addr, id, p.leaf, err)
	}
	return err
}
