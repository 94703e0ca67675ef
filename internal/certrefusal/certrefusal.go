// Package certrefusal names why a peer's certificate failed verification:
// the one classification behind both the quic endpoint's refusals
// (quic.RefusedPeer.Reason, paymentlog_tls_handshakes_refused_total and the
// audit trail's denied lines) and the audit forwarder's refused collectors
// (paymentlog_audit_forward_tls_refused_total), so that the two cannot give
// the same failure different labels. The reasons are metric labels: part of
// the /metrics and audit-line format.
package certrefusal

import (
	"crypto/x509"
	"errors"
	"time"
)

// The reasons Reason returns.
const (
	UnknownCA   = "unknown-ca"    // no chain to a CA of the roots
	Expired     = "expired"       // a certificate of the chain is past its NotAfter
	NotYetValid = "not-yet-valid" // a certificate of the chain is before its NotBefore
	// BadUsage: the leaf's extended key usage does not allow what it was
	// verified for (a client certificate presented by a server, or the
	// reverse).
	BadUsage     = "bad-usage"
	NameMismatch = "name-mismatch" // not for the name or address dialed
	// BadCertificate: any other verification failure.
	BadCertificate = "bad-certificate"
)

// Reason is why a certificate verification failed with err (an x509
// error, as returned by x509.Certificate.Verify, or one that wraps it, as
// crypto/tls's *tls.CertificateVerificationError does), at now: the time
// it was verified at, which tells a certificate not yet valid from an
// expired one (x509 reports both as x509.Expired). An err that is no x509
// error of these is BadCertificate.
func Reason(err error, now time.Time) string {
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &x509.UnknownAuthorityError{}):
		return UnknownCA
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		if invalid.Cert != nil && now.Before(invalid.Cert.NotBefore) {
			return NotYetValid
		}
		return Expired
	case errors.As(err, &invalid) && invalid.Reason == x509.IncompatibleUsage:
		return BadUsage
	case errors.As(err, &x509.HostnameError{}):
		return NameMismatch
	}
	return BadCertificate
}
