package quic

import "crypto/x509"

// A valid certificate for the wrong node: a peer whose certificate the
// handshake accepted (our CA, not expired, not revoked) but which is not
// the node certificate of the node id expected. Inbound, a request that
// names the node it comes from (Peer.CheckNodeID: a broker id, a follower
// id, a raft sender) sent under another certificate; outbound, a node
// dialed by id (ExpectNode) answering with another certificate. Each call
// is refused; refusedWrongNode also tells Config.OnRefusedPeer, as for the
// handshakes refused (refused_peer.go), with reason RefusedWrongNode.

// refusedWrongNode reports, if OnRefusedPeer is set, a call on side with
// the peer at addr refused with err because leaf (nil: none presented) is
// not node id's certificate.
func (e *Endpoint) refusedWrongNode(side, addr string, id int32, leaf *x509.Certificate, err error) {
	tell := e.cfg.OnRefusedPeer
	if tell == nil {
		return
	}
	ref := &RefusedPeer{}
	if leaf != nil {
		ref = refusalOf(leaf)
	}
	ref.Side, ref.Addr, ref.Reason, ref.ExpectedNode, ref.Err = side, addr, RefusedWrongNode, id, err
	tell(*ref)
}
