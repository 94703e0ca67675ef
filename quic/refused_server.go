package quic

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"time"
)

var errNoServerCertificate = errors.New("tls: received empty certificates message")

// reportingServerRefusals is the client configuration for one dial of addr,
// whose server certificate is checked against serverName: base (st.client
// with ServerName set), or when Config.OnRefusedPeer is set a copy that
// checks the server's certificate itself, in VerifyConnection, so that a
// refusal is reported with the reason and the certificate presented
// (crypto/tls returns them only inside an error).
//
// base has crypto/tls verify the chain and the name (InsecureSkipVerify
// false), then refuse revoked serials in VerifyConnection. The copy skips
// the library's verification and VerifyConnection, which crypto/tls calls
// after every handshake whatever InsecureSkipVerify says, refuses what base
// refuses (checkServerCert), with the same error, and crypto/tls then sends
// the server the same alert (bad_certificate: a client sends it for any
// certificate it refuses). The endpoint keeps no client session cache, so
// every dial is a full handshake; a resumed one would be verified in full as
// well. TestServerRefusalsMatchTLS holds the two to the same answers.
func (e *Endpoint) reportingServerRefusals(st *tlsState, base *tls.Config, addr string) *tls.Config {
	tell := e.cfg.OnRefusedPeer
	if tell == nil || st == nil || base.InsecureSkipVerify {
		return base
	}
	c := base.Clone()
	roots, clock, name := c.RootCAs, c.Time, c.ServerName
	c.InsecureSkipVerify = true   // checkServerCert verifies, in VerifyConnection
	c.VerifyPeerCertificate = nil // buildTLSState sets none; it would run before the chain is verified
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		now := time.Now()
		if clock != nil {
			now = clock()
		}
		ref := checkServerCert(cs.PeerCertificates, roots, name, now, st.revoked)
		if ref == nil {
			return nil
		}
		ref.Side, ref.Addr, ref.ServerName = SideOutbound, addr, name
		tell(*ref)
		return ref.Err
	}
	return c
}

// checkServerCert is what a client with roots as RootCAs and serverName as
// ServerName, its VerifyConnection refusing revoked serials, refuses of a
// server that presented certs at now: nil when it accepts. The verification
// is crypto/tls's (handshake_client.go, verifyServerCertificate): the leaf
// verified with the other certificates as intermediates, for serverName and
// server authentication, failing with a *tls.CertificateVerificationError.
// A server always presents a certificate (crypto/tls refuses an empty
// Certificate message before verifying anything).
func checkServerCert(certs []*x509.Certificate, roots *x509.CertPool, serverName string, now time.Time, revoked revokedSet) *RefusedPeer {
	if len(certs) == 0 { // not reached: see above
		return &RefusedPeer{Reason: RefusedBadCertificate, Err: &tls.CertificateVerificationError{Err: errNoServerCertificate}}
	}
	leaf, ref := certs[0], refusalOf(certs[0])
	opts := x509.VerifyOptions{
		Roots:         roots,
		CurrentTime:   now,
		DNSName:       serverName,
		Intermediates: intermediatesOf(certs),
	}
	if _, err := leaf.Verify(opts); err != nil {
		ref.Reason, _ = refusalReason(err, now)
		ref.Err = &tls.CertificateVerificationError{UnverifiedCertificates: certs, Err: err}
		return ref
	}
	if err := revoked.refusePeer(tls.ConnectionState{PeerCertificates: certs}); err != nil {
		ref.Reason, ref.Err = RefusedRevoked, err
		return ref
	}
	return nil
}
