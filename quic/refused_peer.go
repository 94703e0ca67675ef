package quic

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	"paymentlog/internal/certrefusal"
)

// Why a handshake was refused (RefusedPeer.Reason). The reasons of a chain
// that failed verification are certrefusal's, which the audit forwarder
// shares.
const (
	RefusedNoCertificate = "no-certificate"        // the client presented none
	RefusedUnknownCA     = certrefusal.UnknownCA   // no chain to a CA of ca.crt
	RefusedExpired       = certrefusal.Expired     // a certificate of the chain is past its NotAfter
	RefusedNotYetValid   = certrefusal.NotYetValid // a certificate of the chain is before its NotBefore
	// RefusedBadUsage: not a client certificate (inbound) or not a server
	// certificate (outbound), by its extended key usage.
	RefusedBadUsage       = certrefusal.BadUsage
	RefusedBadCertificate = certrefusal.BadCertificate // any other verification failure
	RefusedRevoked        = "revoked"                  // listed in revoked.txt
	// RefusedNameMismatch: the server's certificate is not for the name or
	// address dialed (outbound only, refused_server.go).
	RefusedNameMismatch = certrefusal.NameMismatch
	// RefusedWrongNode: a certificate the handshake accepted, but not the
	// node certificate of the node id expected (wrong_node.go): the id a
	// request claims (inbound), the id dialed (outbound). Not a handshake
	// refusal: each call is refused, the connection stays.
	RefusedWrongNode = "wrong-node"
)

// Which side of a handshake refused it (RefusedPeer.Side).
const (
	SideInbound  = "inbound"  // this endpoint accepted it and refused the client's certificate
	SideOutbound = "outbound" // this endpoint dialed and refused the server's certificate (refused_server.go)
)

// InboundRefusals and OutboundRefusals are the reasons a handshake may be
// refused for, on each side (the server always presents a certificate, and
// only the dialing side checks a name).
var (
	InboundRefusals = []string{RefusedNoCertificate, RefusedUnknownCA, RefusedExpired, RefusedNotYetValid,
		RefusedBadUsage, RefusedBadCertificate, RefusedRevoked}
	OutboundRefusals = []string{RefusedUnknownCA, RefusedExpired, RefusedNotYetValid, RefusedNameMismatch,
		RefusedBadUsage, RefusedBadCertificate, RefusedRevoked}
)

// RefusedPeer is a handshake an endpoint refused because of its peer's
// certificate (Config.OnRefusedPeer): a client's it accepted, or a server's
// it dialed.
type RefusedPeer struct {
	Side string // SideInbound or SideOutbound
	// Addr is the peer's address, host:port: the client's ("" if quic-go
	// did not give it), or the address dialed.
	Addr   string
	Reason string // RefusedUnknownCA, ...
	// ServerName is the name or address the server's certificate was
	// checked against (outbound only).
	ServerName string
	// Name, Serial (hex), Issuer (its distinguished name), NotBefore and
	// NotAfter are the presented leaf certificate's, as presented (not
	// verified): zero for RefusedNoCertificate.
	Name                string
	Serial              string
	Issuer              string
	NotBefore, NotAfter time.Time
	// ExpectedNode is, for RefusedWrongNode, the node id the certificate
	// should have been for.
	ExpectedNode int32
	Err          error // the refusal, as the handshake (or call) failed with it
}

// reportingRefusals is the server configuration for one handshake: st's,
// or when Config.OnRefusedPeer is set a copy that checks the client's
// certificate itself, in VerifyConnection, so that a refusal is reported
// with the client's address (which quic-go passes in hello.Conn;
// tls.ConnectionState does not carry it).
//
// st.server has crypto/tls verify the chain (RequireAndVerifyClientCert),
// which fails before any callback sees the certificate. The copy only
// requests one (RequestClientCert) and VerifyConnection, which crypto/tls
// calls after every full and every resumed handshake, refuses what st.server
// refuses: no certificate; a chain that does not verify as crypto/tls
// verifies it (checkClientCert); a revoked one. A resumed session is
// verified again in full (crypto/tls re-checks the chains it stored).
// TestRefusalsMatchTLS holds the two to the same answers.
func (e *Endpoint) reportingRefusals(st *tlsState, hello *tls.ClientHelloInfo) *tls.Config {
	tell := e.cfg.OnRefusedPeer
	if tell == nil {
		return st.server
	}
	addr := ""
	if hello != nil && hello.Conn != nil && hello.Conn.RemoteAddr() != nil {
		addr = hello.Conn.RemoteAddr().String()
	}
	c := st.server.Clone()
	roots, clock := c.ClientCAs, c.Time
	c.ClientAuth = tls.RequestClientCert
	c.VerifyPeerCertificate = nil // buildTLSState sets none; it would run before the chain is verified
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		now := time.Now()
		if clock != nil {
			now = clock()
		}
		ref := checkClientCert(cs.PeerCertificates, roots, now, st.revoked)
		if ref == nil {
			return nil
		}
		ref.Side, ref.Addr = SideInbound, addr
		tell(*ref)
		return ref.Err
	}
	return c
}

// checkClientCert is what a server under RequireAndVerifyClientCert, with
// roots as ClientCAs and its VerifyConnection refusing revoked serials,
// refuses of a client that presented certs at now: nil when it accepts.
// The verification is crypto/tls's (handshake_server.go,
// processCertsFromClient): the leaf verified with the other certificates as
// intermediates, for client authentication. The error wraps the alert
// crypto/tls would have sent, so a client is told the same (quic-go sends
// the first tls.AlertError it finds).
func checkClientCert(certs []*x509.Certificate, roots *x509.CertPool, now time.Time, revoked revokedSet) *RefusedPeer {
	if len(certs) == 0 {
		return &RefusedPeer{Reason: RefusedNoCertificate,
			Err: fmt.Errorf("tls: client didn't provide a certificate%.0w", tls.AlertError(alertCertificateRequired))}
	}
	leaf, ref := certs[0], refusalOf(certs[0])
	opts := x509.VerifyOptions{
		Roots:         roots,
		CurrentTime:   now,
		Intermediates: intermediatesOf(certs),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if _, err := leaf.Verify(opts); err != nil {
		var alert uint8
		ref.Reason, alert = refusalReason(err, now)
		ref.Err = fmt.Errorf("tls: failed to verify certificate: %w%.0w", err, tls.AlertError(alert))
		return ref
	}
	if err := revoked.refusePeer(tls.ConnectionState{PeerCertificates: certs}); err != nil {
		ref.Reason, ref.Err = RefusedRevoked, err
		return ref
	}
	return nil
}

// refusalOf is the refusal of a peer that presented leaf, its reason and
// error still to be set.
func refusalOf(leaf *x509.Certificate) *RefusedPeer {
	ref := &RefusedPeer{Name: leaf.Subject.CommonName, Issuer: leaf.Issuer.String(), NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter}
	if leaf.SerialNumber != nil {
		ref.Serial = serialKey(leaf.SerialNumber)
	}
	return ref
}

// intermediatesOf is the pool of the certificates a peer presented after
// its leaf, as crypto/tls builds it for verification.
func intermediatesOf(certs []*x509.Certificate) *x509.CertPool {
	pool := x509.NewCertPool()
	for _, c := range certs[1:] {
		pool.AddCert(c)
	}
	return pool
}

// refusalReason is the reason for a failed x509 verification at now
// (certrefusal.Reason), and the alert a server under crypto/tls sends for
// it (processCertsFromClient; a client sends bad_certificate whatever the
// reason).
func refusalReason(err error, now time.Time) (reason string, alert uint8) {
	reason = certrefusal.Reason(err, now)
	switch reason {
	case RefusedUnknownCA:
		return reason, alertUnknownCA
	case RefusedExpired, RefusedNotYetValid:
		return reason, alertCertificateExpired
	}
	return reason, alertBadCertificate
}

// The TLS alerts crypto/tls sends for these refusals (RFC 8446 6.2;
// alertCertificateRequired is in errors.go).
const (
	alertBadCertificate     = 42
	alertCertificateExpired = 45
	alertUnknownCA          = 48
)
