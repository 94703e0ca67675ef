package quic

import (
	"context"
	"time"

	qgo "github.com/quic-go/quic-go"
)

// A peer that restarts on the same address (a node killed and started
// again) forgets every connection it had; our pooled connection to it looks
// alive until we send on it and its stateless reset comes back, so the first
// request after the restart is lost (a raft vote reply costs an election
// timeout; a forwarded proposal is never resent).
//
// A restarted node usually speaks first: it dials us (a raft message, a
// heartbeat). So when we accept a connection from a peer we hold a pooled
// connection to — the same UDP address, or, under mutual TLS, a certificate
// naming the same node — we probe the pooled connection before letting
// anyone send on it:
//
//   - the probe is a ping frame on a new stream, padded so the packet
//     carrying it is large enough to draw a stateless reset;
//   - a restarted peer answers with a stateless reset: the connection dies
//     within a round trip and leaves the pool, and the next send dials the
//     new process;
//   - a live peer answers the ping (an older build answers with an
//     unknown-type error frame, which proves it alive just as well): the
//     connection stays;
//   - no answer within the handshake timeout: the connection is closed with
//     ConnCodeStale and leaves the pool.
//
// Callers that want the connection meanwhile wait for the probe (bounded by
// their context), so their request goes to whichever connection survives.
//
// Why not simply drop the pooled connection when the peer dials us: two
// nodes normally each dial the other (one pooled connection per direction).
// Dropping ours whenever theirs arrives would make each redial tear down the
// other side's connection, forever. A probe never closes a connection whose
// peer answers, so two nodes dialing each other at once leave both
// connections standing. Only connections completed before the new one
// arrived are probed (a younger one was dialed to the peer as it is now), and
// one probe at a time per connection.

// framePing is the transport's liveness probe: the server answers with a
// framePing frame (body nil) and closes the stream. Never passed to
// handlers, not subject to the Authorizer (it carries nothing).
const framePing FrameType = 0xFE

// pingPadding pads the ping frame's body so that the packet carrying it
// exceeds quic-go's minimum for answering with a stateless reset (42 bytes).
const pingPadding = 64

// pingFrame is the probe request; its body is msgpack bin8 of zeros,
// pingPadding bytes in all.
var pingFrame = func() []byte {
	b := make([]byte, frameHeaderLen+pingPadding)
	putHeader(b, framePing, pingPadding)
	b[frameHeaderLen], b[frameHeaderLen+1] = 0xc4, pingPadding-2
	return b
}()

// pongFrame is the server's answer to framePing; its body is msgpack nil.
var pongFrame = func() []byte {
	b := make([]byte, frameHeaderLen+1)
	putHeader(b, framePing, 1)
	b[frameHeaderLen] = 0xc0
	return b
}()

// peerConnected is called for every accepted connection, before its
// streams are served: it starts a probe of each pooled connection to the
// same peer (see the comment at the top of this file).
func (p *connPool) peerConnected(peer Peer, at time.Time) {
	type target struct {
		addr string
		ent  *poolEntry
	}
	var targets []target
	p.mu.Lock()
	for addr, ent := range p.mu.conns {
		select {
		case <-ent.ready:
		default:
			continue // still dialing: the peer as it is now answers
		}
		if ent.err != nil || ent.probe != nil || ent.stale || !ent.dialedAt.Before(at) {
			continue
		}
		samePeer := ent.remote == peer.Addr ||
			peer.Authenticated && peer.Role == RoleNode && ent.nodeID != 0 && ent.nodeID == peer.NodeID
		if !samePeer {
			continue
		}
		ent.probe = make(chan struct{})
		targets = append(targets, target{addr, ent})
	}
	p.mu.Unlock()
	for _, tg := range targets {
		go p.probe(tg.addr, tg.ent)
	}
}

// probe pings ent's connection and removes it from the pool unless the
// peer answers; then it releases the callers waiting on ent.probe.
func (p *connPool) probe(addr string, ent *poolEntry) {
	err := p.e.ping(ent.conn, p.e.cfg.HandshakeTimeout)
	if err != nil {
		if ent.conn.Context().Err() == nil {
			ent.conn.CloseWithError(ConnCodeStale, "peer reconnected and this connection did not answer")
		}
		p.remove(addr, ent)
		p.e.log.Info("quic: pooled connection dropped: the peer reconnected and the old connection failed a probe",
			"peer", addr, "err", describe(err))
	}
	if h := p.probeHook; h != nil {
		h(addr, err)
	}
	p.mu.Lock()
	ent.stale = err != nil
	close(ent.probe)
	ent.probe = nil
	p.mu.Unlock()
}

// ping sends a framePing on a new stream of conn and waits up to timeout
// for any answer frame.
func (e *Endpoint) ping(conn *qgo.Conn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(e.hardCtx, timeout)
	defer cancel()
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	_ = str.SetReadDeadline(deadline)
	_ = str.SetWriteDeadline(deadline)
	if _, err := str.Write(pingFrame); err != nil {
		str.CancelRead(StreamCodeCanceled)
		str.CancelWrite(StreamCodeCanceled)
		return err
	}
	fr := frameReader{r: str, maxFrame: e.cfg.MaxFrameSize, maxItems: e.cfg.MaxListItems}
	_, err = fr.next()
	if err != nil {
		str.CancelRead(StreamCodeCanceled)
		str.CancelWrite(StreamCodeCanceled)
		if cerr := context.Cause(conn.Context()); cerr != nil {
			err = cerr
		}
		return err
	}
	str.CancelRead(StreamCodeDone)
	str.Close()
	return nil
}

// answerPing answers a framePing stream.
func answerPing(str *qgo.Stream) {
	str.CancelRead(StreamCodeDone)
	_ = str.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	if _, err := str.Write(pongFrame); err != nil {
		str.CancelWrite(StreamCodeCanceled)
		return
	}
	str.Close()
}
