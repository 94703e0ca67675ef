package quic

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnexpectedServer matches (errors.Is) the error of a Call or OpenSession
// whose context names the node it means to reach (ExpectNode) when the
// server that answered at the address does not hold that node's
// certificate: another node, a client certificate, or one without a role.
// Not retriable on the same connection: the certificate does not change.
var ErrUnexpectedServer = errors.New("quic: server is not the expected node")

type expectNodeKey struct{}

// ExpectNode returns a context under which Call and OpenSession succeed only
// if the server reached holds a node certificate for node id (checked once
// per connection, after the handshake: the server side's Peer.CheckNodeID,
// seen from the dialer). Node-to-node callers use it wherever they dial a
// node by id: a replica fetching from its leader, a raft stream, a call to a
// controller. On an endpoint that does not verify servers (dev mode: no TLS
// directory) it changes nothing.
func ExpectNode(ctx context.Context, id int32) context.Context {
	return context.WithValue(ctx, expectNodeKey{}, id)
}

// ExpectedNode is the node id ExpectNode put in ctx, if any.
func ExpectedNode(ctx context.Context) (int32, bool) {
	id, ok := ctx.Value(expectNodeKey{}).(int32)
	return id, ok
}

// checkExpected returns an error unless ent's server is the node ctx expects
// (see ExpectNode). ent's connection is ready.
func (e *Endpoint) checkExpected(ctx context.Context, addr string, ent *poolEntry) error {
	id, ok := ExpectedNode(ctx)
	if !ok || !e.verifiesServers {
		return nil
	}
	p := peerOf(addr, ent.conn.ConnectionState().TLS, true)
	if p.Role == RoleNode && p.NodeID == id {
		return nil
	}
	err := &OpError{Op: "dial", Addr: addr, Err: fmt.Errorf("%w: dialed node %d, the server's certificate %q is a %s",
		ErrUnexpectedServer, id, p.Name, p.Identity())}
	e.refusedWrongNode(SideOutbound, addr, id, p.leaf, err)
	return err
}
