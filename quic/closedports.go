package quic

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Ports found closed by this endpoint's own traffic.
//
// A peer whose process died on a host that is still up leaves its UDP port
// with no socket behind it, and the host answers each datagram sent there
// with an ICMP port unreachable — the first few of them: Linux sends each
// peer a burst of 6 such errors, then one a second (net.ipv4.icmp_ratelimit).
// Between hosts, the endpoint's own QUIC traffic to the dead port (fetch
// answers, raft messages, retransmissions) draws those first errors, and a
// probe sent later (internal/portprobe) is often answered by nothing.
//
// So on Linux the endpoint's socket has IP_RECVERR (and IPV6_RECVERR) on:
// the kernel queues each ICMP error on the socket's error queue, with the
// destination of the datagram that drew it, and the endpoint reads the
// queue (recverr_linux.go) and keeps, per address, when its port was last
// found closed. PortClosedSince answers from that record.
type closedPorts struct {
	mu sync.Mutex
	m  map[netip.AddrPort]time.Time
	// found counts the port-unreachable errors read (Stats).
	found atomic.Uint64
}

// maxClosedPorts bounds closedPorts.m (it starts over when full).
const maxClosedPorts = 1024

// record notes that a datagram sent to addr was refused at at.
func (c *closedPorts) record(addr netip.AddrPort, at time.Time) {
	c.found.Add(1)
	addr = portKey(addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxClosedPorts {
		c.m = make(map[netip.AddrPort]time.Time)
	}
	c.m[addr] = at
}

// since reports whether addr's port was found closed after t.
func (c *closedPorts) since(addr netip.AddrPort, t time.Time) bool {
	addr = portKey(addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.m[addr]
	return ok && at.After(t)
}

// portKey is addr as closedPorts keys it: an IPv4-mapped address as IPv4,
// without a zone.
func portKey(addr netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(addr.Addr().Unmap().WithZone(""), addr.Port())
}

// PortClosedSince reports whether a datagram this endpoint sent to addr
// (host:port, a peer's listening address) was refused by its host (ICMP port
// unreachable: no socket there) after since. False where the endpoint does
// not read ICMP errors (outside Linux), for an address that does not
// resolve, and whenever the host or a firewall stays silent.
func (e *Endpoint) PortClosedSince(addr string, since time.Time) bool {
	if e.closed == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		u, rerr := net.ResolveUDPAddr("udp", addr)
		if rerr != nil {
			return false
		}
		ap = u.AddrPort()
	}
	return e.closed.since(ap, since)
}
