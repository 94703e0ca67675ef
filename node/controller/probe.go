package controller

import (
	"context"
	"time"

	"paymentlog/internal/portprobe"
	"paymentlog/node/metadata"
)

// Probing silent brokers: a dead process is fenced without waiting out its
// session.
//
// A broker whose process died (SIGKILL, a crash, the OOM killer) on a host
// that is still up leaves its UDP port with no socket behind it, and the
// host refuses datagrams sent there (ICMP port unreachable). When a
// broker's heartbeats have been silent for ProbeAfter, the active
// controller probes its registered address (portprobe) once per tick until
// it hears from it again; a refusal of a probe sent after the broker's
// latest heartbeat fences that incarnation at once, as an expired session
// would (the same DecideFence: leaders are elected from the ISR, nothing
// else changes). Everything else leaves the session to run out as before:
// a stopped process (SIGSTOP) keeps its socket, a dead host or a partition
// answers nothing, and a firewall may drop the ICMP.
//
// The probe (Config.Probe, node/port_probe.go) also answers Closed when
// the node's own QUIC traffic to the broker drew a port unreachable after
// its last heartbeat: between hosts the dead host's few ICMP errors go to
// that traffic before a probe is sent.
//
// Safety does not rest on the probe: fencing a live broker costs
// leaderships, never records. A probe's own refusal can only be for its
// own socket (a fresh one each, on a port the kernel picked); an ICMP error
// for the node's QUIC socket could be forged by a host that knows both
// addresses, but it counts only for a broker already silent for
// ProbeAfter.

// silentBroker is a broker to probe and when its last heartbeat came.
type silentBroker struct {
	metadata.BrokerState
	heard time.Time
}

// silent hands out, in id order, the unfenced brokers of img other than
// self whose current incarnation has been silent longer than after, with no
// probe in flight and no closed port found yet, and marks them probing.
func (s *sessions) silent(img *metadata.Image, now time.Time, after time.Duration, self int32) []silentBroker {
	var out []silentBroker
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || b.ID == self || b.Fenced || ss.incarnation != b.Incarnation || ss.probing || !ss.closedAt.IsZero() || now.Sub(ss.heard) <= after {
			continue
		}
		ss.probing = true
		s.m[b.ID] = ss
		out = append(out, silentBroker{b, ss.heard})
	}
	return out
}

// nextProbe is when the first of the brokers silent hands out next would
// be silent longer than after, counting only those not yet that silent at
// now (a broker already past it is probed again at the periodic checks):
// zero when there is none.
func (s *sessions) nextProbe(img *metadata.Image, now time.Time, after time.Duration, self int32) time.Time {
	var at time.Time
	for _, b := range img.Brokers() {
		ss, ok := s.m[b.ID]
		if !ok || b.ID == self || b.Fenced || ss.incarnation != b.Incarnation || ss.probing || !ss.closedAt.IsZero() {
			continue
		}
		// silent hands a broker out once now - heard > after.
		due := ss.heard.Add(after + time.Millisecond)
		if due.After(now) && (at.IsZero() || due.Before(at)) {
			at = due
		}
	}
	return at
}

// backdate counts broker id as heard last at at, when that is earlier than
// its heard: silent for longer than this controller has been listening.
func (s *sessions) backdate(id int32, at time.Time) {
	if ss, ok := s.m[id]; ok && at.Before(ss.heard) {
		ss.heard = at
		s.m[id] = ss
	}
}

// markClosed records that broker id's port was found closed at at, by a
// probe made elsewhere (the raft follower's of its leader, PortRefused).
func (s *sessions) markClosed(id int32, at time.Time) {
	if ss, ok := s.m[id]; ok && ss.closedAt.IsZero() {
		ss.closedAt, ss.closedBy = at, foundByRaft
		s.m[id] = ss
	}
}

// probed records the result of a probe of broker id's incarnation sent at
// sent. A closed port counts only if no heartbeat of that incarnation came
// after the probe was sent; it reports whether the broker is now to be
// fenced for it.
func (s *sessions) probed(id int32, incarnation int64, sent time.Time, res portprobe.Result, now time.Time) bool {
	ss, ok := s.m[id]
	if !ok || ss.incarnation != incarnation {
		return false
	}
	ss.probing = false
	if res.IsClosed() && ss.heard.Before(sent) && ss.closedAt.IsZero() {
		ss.closedAt, ss.closedBy = now, foundByProbe
		if res == portprobe.Seen {
			ss.closedBy = foundByTraffic
		}
	}
	s.m[id] = ss
	return !ss.closedAt.IsZero()
}

// probeSilent starts a probe of every broker silent for ProbeAfter (none
// without Probe); each reports to probeDone. Loop only, active controller
// only; c.probes counts the probes (Run waits for them).
func (c *Controller) probeSilent(ctx context.Context) {
	if c.cfg.Probe == nil {
		return
	}
	img, now := c.cfg.Store.Image(), c.cfg.Now()
	c.mu.Lock()
	silent := c.mu.sessions.silent(img, now, c.cfg.ProbeAfter, c.cfg.NodeID)
	c.mu.Unlock()
	for _, b := range silent {
		c.probes.Add(1)
		c.probesSent.Add(1)
		go func() {
			defer c.probes.Done()
			res, err := c.cfg.Probe(ctx, b.Addr, b.heard)
			if err != nil {
				c.log.Debug("probe of a silent broker's port failed", "broker", b.ID, "addr", b.Addr, "err", err)
			}
			c.probeDone(b.BrokerState, now, res)
		}()
	}
}

// probeDone takes a probe's result; a closed port wakes the loop to fence
// the broker.
func (c *Controller) probeDone(b metadata.BrokerState, sent time.Time, res portprobe.Result) {
	c.mu.Lock()
	fence := c.mu.sessions.probed(b.ID, b.Incarnation, sent, res, c.cfg.Now())
	c.mu.Unlock()
	if !fence {
		return
	}
	select {
	case c.fenceKick <- struct{}{}:
	default:
	}
}

// PortRefused tells the controller that node id's port refused a probe at
// at: this node's raft found its raft leader, node id, gone
// (raftnode.Node.OnLeaderGone). If this node becomes the active controller
// in place of id within a second (or a session timeout) of that, it fences
// id's broker at its first check without probing again: the dead host's
// kernel may have no ICMP error left for this peer by then (Linux sends
// each peer 6 at once, then one a second, and this node's raft and QUIC
// traffic to the dead port draw on them too).
func (c *Controller) PortRefused(id int32, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.refused = portRefusal{id: id, at: at}
}

// portRefusal is the last PortRefused.
type portRefusal struct {
	id int32
	at time.Time
}
