package quic

import (
	"sync"
	"sync/atomic"

	qgo "github.com/quic-go/quic-go"
)

// TransportStats are an endpoint's QUIC counters over every connection it
// accepted or dialed, closed ones included (for /metrics).
type TransportStats struct {
	Conns       int    // connections open now
	PacketsSent uint64 // including retransmissions
	// PacketsLost counts the packets this side's loss detection declared
	// lost: dropped by the kernel (a full socket buffer), by quic-go itself
	// (it drops an arriving packet when 256 already wait for the same
	// connection, which no kernel counter sees), or reordered past the
	// loss thresholds. Their frames were sent again.
	PacketsLost uint64
	BytesSent   uint64
	// RequestsResent counts Idempotent requests sent a second time because
	// their connection's peer had restarted (see resend.go).
	RequestsResent uint64
	// PortsClosed counts the ICMP port-unreachable errors the endpoint's
	// datagrams drew (closedports.go): a peer process gone, its host up.
	PortsClosed uint64
	// SendDrops counts the datagrams (single ones or GSO trains) the host
	// dropped on their way out, for a full qdisc or device queue (ENOBUFS,
	// read only on Linux). Their packets were lost like any other and sent
	// again; the connection lives on.
	SendDrops uint64
	// PeersGone counts connections closed because a response was overdue
	// and the peer's port was found closed (ConnCodePeerGone, nudge.go);
	// DialsRefused the dials that failed with ErrPortClosed (dialclosed.go).
	// Both read only on Linux.
	PeersGone    uint64
	DialsRefused uint64
	// PollErrorReads counts the socket reads Go's poller failed after an
	// ICMP error alone woke it, each then made past the poller (read only
	// on Linux; rawReceiver.pollErrs).
	PollErrorReads uint64
}

// sendDropper is the endpoint's socket when it counts send drops and
// reads failed by the poller (groConn on Linux).
type sendDropper interface {
	sendDrops() uint64
	pollErrorReads() uint64
}

// connStats keeps the live connections and the totals of closed ones.
type connStats struct {
	mu      sync.Mutex
	live    map[*qgo.Conn]struct{}
	retired TransportStats
	resent  atomic.Uint64
	gone    atomic.Uint64 // PeersGone
	refused atomic.Uint64 // DialsRefused
}

// watch counts c from now until it closes.
func (s *connStats) watch(c *qgo.Conn) {
	s.mu.Lock()
	if s.live == nil {
		s.live = make(map[*qgo.Conn]struct{})
	}
	s.live[c] = struct{}{}
	s.mu.Unlock()
	go func() {
		<-c.Context().Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.live, c)
		s.retired.add(c.ConnectionStats())
	}()
}

func (t *TransportStats) add(c qgo.ConnectionStats) {
	t.PacketsSent += c.PacketsSent
	t.PacketsLost += c.PacketsLost
	t.BytesSent += c.BytesSent
}

func (s *connStats) snapshot() TransportStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.retired
	t.Conns = len(s.live)
	t.RequestsResent = s.resent.Load()
	t.PeersGone, t.DialsRefused = s.gone.Load(), s.refused.Load()
	for c := range s.live {
		t.add(c.ConnectionStats())
	}
	return t
}

// Stats returns the endpoint's transport counters.
func (e *Endpoint) Stats() TransportStats {
	st := e.stats.snapshot()
	if e.closed != nil {
		st.PortsClosed = e.closed.found.Load()
	}
	if d, ok := e.tr.Conn.(sendDropper); ok {
		st.SendDrops, st.PollErrorReads = d.sendDrops(), d.pollErrorReads()
	}
	return st
}
