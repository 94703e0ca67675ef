package audit

import (
	"net"
	"sync"
	"time"
)

// Refused handshakes (PCI DSS 10.2.1.4, invalid access attempts): a client
// whose certificate the node refuses (none, an unknown CA, expired, not yet
// valid, not a client certificate, revoked) leaves a denied line, op
// "connect", result the reason, details.side "inbound"; so does a peer the
// node dialed (another node, for replication or raft) whose server
// certificate it refuses (the same reasons, or "name-mismatch": not for the
// address dialed), details.side "outbound", addr the address dialed; and a
// valid certificate for another node than the one a request claims or the
// node dialed ("wrong-node", details.expected_node; each call is refused). A
// scanner or a misconfigured client retries fast, and so does the node
// dialing a peer, so the same refusal is written at most once per
// RefusedRepeatWindow: per side, peer host (the address without its port,
// which changes with every connection), reason, and certificate serial and
// issuer. The attempts left out are counted in the next line written for
// that key (details.repeated) and in paymentlog_audit_suppressed_total; the
// lines written are also under DeniedPerSecond, as every denied line is.

// RefusedRepeatWindow is how often the same refused handshake is written.
const RefusedRepeatWindow = time.Minute

// maxRefusedKeys bounds the refusals remembered; past it, those older than
// the window are forgotten, and if that frees nothing, all are: lines are
// then written again sooner, never left out uncounted.
const maxRefusedKeys = 1 << 14

// The sides of a refused handshake (RefusedHandshake.Side).
const (
	SideInbound  = "inbound"  // a client's certificate, of a connection the node accepted
	SideOutbound = "outbound" // a server's certificate, of a connection the node dialed
)

// RefusedHandshake is a handshake the node refused because of its peer's
// certificate.
type RefusedHandshake struct {
	Side    string // SideInbound or SideOutbound
	Reason  string // the line's result: "unknown-ca", "expired", "revoked", ...
	Message string // the refusal's error
	// ServerName is what the server's certificate was checked against
	// (outbound: the host dialed).
	ServerName string
	// Serial (hex), Issuer (distinguished name), NotBefore and NotAfter are
	// the presented certificate's; zero without one.
	Serial, Issuer      string
	NotBefore, NotAfter time.Time
	// ExpectedNode is, for a certificate valid but not for the node id
	// expected (result "wrong-node"), that node id.
	ExpectedNode int32
}

// ConnectDetails are a refused connect line's details.
type ConnectDetails struct {
	Side       string `json:"side,omitempty"`        // SideInbound or SideOutbound
	ServerName string `json:"server_name,omitempty"` // outbound: the name checked
	Serial     string `json:"serial,omitempty"`
	Issuer     string `json:"issuer,omitempty"`
	NotBefore  string `json:"not_before,omitempty"` // RFC 3339
	NotAfter   string `json:"not_after,omitempty"`
	// ExpectedNode is the node id a wrong-node certificate should have
	// been for: the one the request claimed (inbound), or dialed (outbound).
	ExpectedNode int32 `json:"expected_node,omitempty"`
	// Repeated are the same refusals (side, peer host, reason, serial,
	// issuer) not written since the last line for them.
	Repeated uint64 `json:"repeated,omitempty"`
}

// RefusedConnect writes a denied line, op "connect" on the resource
// (resourceType and its name), for a refused handshake with who (principal
// "User:" and the certificate's common name, not authenticated; "" without
// a certificate; addr the client's, or the address dialed), unless the same
// one was written less than RefusedRepeatWindow ago.
func (l *Log) RefusedConnect(who Who, resourceType, name string, h RefusedHandshake) {
	if l == nil {
		return
	}
	now := l.now()
	repeated, ok := l.refused.take(refusedKey{side: h.Side, host: hostOf(who.Addr), reason: h.Reason, serial: h.Serial, issuer: h.Issuer}, now)
	if !ok {
		l.suppressed.Add(1)
		return
	}
	who.Authenticated = false
	ln := l.newLine(EventDenied, who, OpConnect, h.Reason, h.Message)
	ln.Resource, ln.ResourceName = resourceType, &name
	d := ConnectDetails{Side: h.Side, ServerName: h.ServerName, Serial: h.Serial, Issuer: h.Issuer, ExpectedNode: h.ExpectedNode, Repeated: repeated}
	if !h.NotBefore.IsZero() {
		d.NotBefore = h.NotBefore.UTC().Format(time.RFC3339)
	}
	if !h.NotAfter.IsZero() {
		d.NotAfter = h.NotAfter.UTC().Format(time.RFC3339)
	}
	ln.Details = rawJSON(d)
	l.mu.Lock()
	defer l.mu.Unlock()
	skipped, ok := l.lim.take(now)
	if !ok {
		l.suppressed.Add(1)
		return
	}
	ln.Suppressed = skipped
	l.write(&ln)
}

// hostOf is addr without its port (addr itself if it has none).
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

type refusedKey struct {
	side, host, reason, serial, issuer string
}

// refusedSeen remembers, per refusal, when it was last written and how
// many of it were left out since.
type refusedSeen struct {
	mu   sync.Mutex
	last map[refusedKey]*refusedEntry
}

type refusedEntry struct {
	written  time.Time
	repeated uint64
}

// take reports whether a refusal at now should be written and, if so, how
// many of it were left out since the last one written (which it then
// remembers as now).
func (s *refusedSeen) take(k refusedKey, now time.Time) (repeated uint64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, found := s.last[k]; found {
		if now.Sub(e.written) < RefusedRepeatWindow {
			e.repeated++
			return 0, false
		}
		repeated = e.repeated
		e.written, e.repeated = now, 0
		return repeated, true
	}
	if s.last == nil {
		s.last = map[refusedKey]*refusedEntry{}
	}
	makeRoom(s.last, maxRefusedKeys, now, RefusedRepeatWindow, func(e *refusedEntry) time.Time { return e.written })
	s.last[k] = &refusedEntry{written: now}
	return 0, true
}
