// Package portprobe tells whether a UDP port has no socket behind it: the
// controller's quick check that a broker whose heartbeats stopped has lost
// its process, not its network (node/controller, probe.go), and a raft
// follower's of its silent leader (raftnode, leadergone.go).
//
// How: a datagram of one zero byte, sent from a socket of its own connected
// to the address. When the host is up and nothing is bound to the port, its
// kernel answers with ICMP port unreachable, and the probe's socket reports
// ECONNREFUSED on the next read. A live QUIC endpoint drops the byte unread
// (it is no QUIC packet: the fixed bit is clear, and it is too short for a
// stateless reset to answer), and so does a stopped (SIGSTOP) process's
// socket; a dead host, a partition or a firewall that drops ICMP answer
// nothing, and the read's deadline ends the probe with Open. Only Closed is
// a finding; Open means "not shown to be closed".
//
// One socket per probe, so a refusal belongs to that probe alone: an ICMP
// error left pending on a shared socket could be taken for a later probe's,
// of a broker that came back meanwhile.
package portprobe

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"
)

// Result is what a probe found.
type Result int

const (
	// Open: no refusal before the deadline (a socket may be bound there, or
	// the answer was lost, or the host is down).
	Open Result = iota
	// Closed: the host refused the probe: nothing listens on the port.
	Closed
	// Seen: the caller's own traffic to the port drew the refusal after the
	// peer was last heard from (a Func's answer, with or without a probe of
	// its own).
	Seen
)

// IsClosed reports whether r found the port closed, by a probe or by the
// caller's own traffic.
func (r Result) IsClosed() bool { return r == Closed || r == Seen }

// FoundBy names what found a closed port: "probe" (Closed) or "traffic"
// (Seen); "" for Open.
func (r Result) FoundBy() string {
	switch r {
	case Closed:
		return "probe"
	case Seen:
		return "traffic"
	}
	return ""
}

func (r Result) String() string {
	switch r {
	case Closed:
		return "closed"
	case Seen:
		return "closed (seen by own traffic)"
	}
	return "open"
}

// Func is how the controller and a raft follower check a silent peer's
// port (node/port_probe.go makes it): Closed or Seen (IsClosed) when the
// peer's process is gone. since is when the caller last heard from the
// peer: a port found closed after since by the caller's own traffic to it
// (the ICMP errors its QUIC socket reads, quic.Endpoint.PortClosedSince)
// counts as well as a refused probe, and answers Seen, without a probe
// when found before one.
type Func func(ctx context.Context, addr string, since time.Time) (Result, error)

// Probe sends one probe datagram to addr (host:port, UDP) and waits until
// wait has passed, ctx ends, or the host refuses it. The error is for a
// probe that could not be made (an address that does not resolve, no
// route); it comes with Open.
func Probe(ctx context.Context, addr string, wait time.Duration) (Result, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", addr)
	if err != nil {
		return Open, err
	}
	defer c.Close()
	deadline := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	if err := c.SetDeadline(deadline); err != nil {
		return Open, err
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write([]byte{0}); err != nil {
		return classify(err)
	}
	// Nothing answers a probe with data; a read returns only with the
	// refusal or at the deadline.
	var b [1]byte
	_, err = c.Read(b[:])
	return classify(err)
}

func classify(err error) (Result, error) {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Closed, nil
	case err == nil, errors.Is(err, context.Canceled), isTimeout(err):
		return Open, nil
	default:
		return Open, err
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
