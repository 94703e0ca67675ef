package quic

import (
	"time"
)

// A link that drops every packet one way for a while (a node that can
// still receive but not send, or the reverse) leaves both ends of a
// connection in QUIC's loss recovery: nothing is acknowledged, so quic-go
// sends nothing new once its congestion window is used and retransmits
// only when its probe timeout (PTO) fires, and the PTO doubles each time
// (RFC 9002 §6.2; quic-go caps it at 60 s). When the link comes back, the
// connection stays silent until the next probe: measured over loopback, a
// call stalled by a 1 s one-way fault was answered 0.75 s after the link
// healed, by a 2 s fault 0.87 s after (oneway_test.go), and a chaos run
// saw records wait up to 2 s past the heal.
//
// So a dialed connection with a response overdue is nudged: every
// nudgeEvery during which a call or session on it has been waiting for a
// response frame and not one packet has arrived from the peer, the pool
// sends a liveness probe (framePing, see reconnect.go) on a new stream.
// Each probe is a new packet (new stream data, nothing in flight to
// retransmit); the first to arrive after the link heals draws an
// acknowledgement, whose arrival makes quic-go declare the earlier
// packets lost and send them again at once (RFC 9002 §6.1), and resets
// the PTO backoff. A peer that could not send answers the probe with new
// data of its own, which draws our acknowledgement, and recovers its lost
// packets the same way. The probes carry nothing; a peer that does not
// know the type (an older build) answers with an error frame, which nudges
// as well. Idle connections and connections the peer is talking on are
// left alone, so a healthy cluster sends no probes but those of long-polls
// the peer has nothing to answer yet (at most one per nudgeEvery each).
//
// A peer whose process is gone (killed, crashed) answers nothing either, and
// a call waiting on it used to wait for the idle timeout (5 s by default) or
// its own deadline: an ISR change sent to a controller that had just died
// held its partition's proposal until that node restarted. Its host answers
// the probes with ICMP port unreachable, which the endpoint reads
// (closedports.go). So when a response is overdue and the peer's port was
// found closed after the last packet that came from it, the connection is
// closed with ConnCodePeerGone: every call on it fails at once, and the next
// one dials again. Only a datagram sent after the peer's last packet can
// find its port closed without the process being gone; a peer that restarts
// on the same port has forgotten the connection anyway (reconnect.go).
const (
	nudgeEvery = 100 * time.Millisecond
	// nudgeWait bounds one probe: it is not waited for, only sent, and a
	// later probe does the nudging if it got lost.
	nudgeWait = 4 * nudgeEvery
)

// nudge probes ent's connection while a response is overdue (see above),
// until the connection closes.
func (p *connPool) nudge(ent *poolEntry) {
	conn := ent.conn
	t := time.NewTicker(nudgeEvery)
	defer t.Stop()
	var seen uint64
	heard := time.Now() // a tick by which every packet received so far had come
	for {
		select {
		case <-conn.Context().Done():
			return
		case <-t.C:
		}
		got := conn.ConnectionStats().PacketsReceived
		quiet := got == seen
		seen = got
		if !quiet {
			heard = time.Now()
		}
		if !quiet || ent.waiting.Load() == 0 {
			continue
		}
		if p.e.PortClosedSince(ent.remote, heard) {
			p.e.log.Info("quic: connection closed: a response is overdue and the peer's port was found closed (its process is gone)",
				"peer", ent.remote, "silent", time.Since(heard).Round(time.Millisecond))
			p.e.stats.gone.Add(1)
			conn.CloseWithError(ConnCodePeerGone, "peer's port found closed")
			return
		}
		if h := p.nudgeHook; h != nil {
			h()
		}
		go p.e.ping(conn, nudgeWait)
	}
}

// nudged marks a response awaited on conn of ent until the returned
// function is called (see nudge). ent may be nil.
func nudged(ent *poolEntry) func() {
	if ent == nil {
		return func() {}
	}
	ent.waiting.Add(1)
	return func() { ent.waiting.Add(-1) }
}
