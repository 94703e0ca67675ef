package audit

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"paymentlog/internal/certrefusal"
)

// Syslog over TLS (RFC 5425; forwarder's tls://HOST:PORT, 6514 the
// registered port): the octet-counted frames of TCP inside a TLS 1.2+
// connection (1.3 preferred: crypto/tls offers it first). The collector's
// certificate is verified against ForwardTLS.CAFile (default: the system
// roots) for ForwardTLS.ServerName (default: HOST), and the node presents a
// client certificate only when given one (CertFile, KeyFile).
//
// The files are read again at every connection, so a CA bundle or client
// certificate rotated on disk is used from the next reconnect on (the node's
// own --tls-reload-interval and SIGHUP reload the cluster's TLS directory in
// the quic endpoint, which these files are not part of). A certificate
// either side refuses is a ForwardRefusal: logged as an error once per
// reason until the collector is reached again, counted every time
// (Counts.ForwardTLSRefused), and retried every second like an unreachable
// collector, since it may be fixed or rotated without a restart.

// ForwardTLS configures forwarding over tls:// (zero: the defaults above).
type ForwardTLS struct {
	// CAFile is a PEM bundle of the CAs the collector's certificate must
	// chain to ("": the system roots).
	CAFile string
	// ServerName is the name the collector's certificate must be for (""
	// the address's HOST; an IP address is checked against the
	// certificate's IP SANs).
	ServerName string
	// CertFile and KeyFile are the client certificate and key (PEM) the
	// node presents if the collector asks for one; both or neither.
	CertFile, KeyFile string
}

// IsZero reports whether t sets nothing.
func (t ForwardTLS) IsZero() bool { return t == ForwardTLS{} }

// Check refuses options that cannot work with the collector address addr:
// any of them without tls://, a certificate without its key (or the
// reverse), or files that do not load. One line.
func (t ForwardTLS) Check(addr string) error {
	network, _, err := ParseForwardAddr(addr)
	if err != nil {
		return err
	}
	return t.checkFor(network, addr)
}

// checkFor is Check of addr, already parsed: network is its
// ParseForwardAddr network.
func (t ForwardTLS) checkFor(network, addr string) error {
	if network != "tls" {
		if !t.IsZero() {
			return fmt.Errorf("audit syslog %q: a CA, server name or client certificate needs tls://HOST:PORT", addr)
		}
		return nil
	}
	_, err := t.config("")
	return err
}

// ForwardRefusal is why a TLS connection to the collector failed
// (Counts.ForwardTLSRefused's keys).
const (
	// The collector's certificate, as the node verified it: certrefusal's
	// reasons, which the quic endpoint's refusals share, less
	// certrefusal.BadUsage (a certificate not for servers), which is
	// ForwardBadCertificate here.
	ForwardUnknownCA      = certrefusal.UnknownCA      // no chain to a CA of CAFile (or the system roots)
	ForwardExpired        = certrefusal.Expired        // a certificate of the chain is past its NotAfter
	ForwardNotYetValid    = certrefusal.NotYetValid    // a certificate of the chain is before its NotBefore
	ForwardNameMismatch   = certrefusal.NameMismatch   // not for ServerName (or HOST)
	ForwardBadCertificate = certrefusal.BadCertificate // any other verification failure
	// ForwardCollectorRefused: the collector ended the handshake with an
	// alert, mostly because it refused the node's client certificate (or
	// its lack of one).
	ForwardCollectorRefused = "collector-refused"
	// ForwardHandshakeFailed: any other failed handshake (no TLS at the
	// address, no common version, files that no longer load).
	ForwardHandshakeFailed = "handshake-failed"
)

// ForwardRefusals are the reasons in the order /metrics lists them.
var ForwardRefusals = [...]string{ForwardUnknownCA, ForwardExpired, ForwardNotYetValid, ForwardNameMismatch,
	ForwardBadCertificate, ForwardCollectorRefused, ForwardHandshakeFailed}

// forwardVerdictWait bounds how long a TLS 1.3 connection whose collector
// asked for a client certificate waits for its verdict on it before the
// first line is sent. Under TLS 1.3 the client's handshake ends before the
// server has checked its certificate, and the collector never writes to a
// syslog sender, so a refusal is only seen by reading: without this wait the
// lines sent meanwhile would be lost and counted as forwarded. A collector
// that sends session tickets (crypto/tls, OpenSSL and GnuTLS do, after
// accepting the certificate) ends the wait at once.
const forwardVerdictWait = time.Second

// config is the client configuration for serverName, the files read now.
func (t ForwardTLS) config(serverName string) (*tls.Config, error) {
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("audit syslog: a client certificate needs both its certificate and its key file")
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cmp.Or(t.ServerName, serverName)}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("audit syslog CA: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("audit syslog CA %s: no PEM certificate in it", t.CAFile)
		}
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("audit syslog client certificate: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

// dialTLS connects to the collector at addr (host:port) over TLS, reading
// t's files again. A failure after the TCP connection was made is a
// *forwardRefusedError.
func dialTLS(ctx context.Context, t ForwardTLS, addr string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(addr)
	cfg, err := t.config(host)
	if err != nil {
		return nil, &forwardRefusedError{reason: ForwardHandshakeFailed, err: err}
	}
	d := net.Dialer{Timeout: forwardDialTimeout}
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	v := &verdict{}
	cfg.ClientSessionCache = v
	// Asked for a certificate, present ours or none (an empty one, as
	// crypto/tls does without the callback); the callback notes that it
	// was asked.
	cert := &tls.Certificate{}
	if len(cfg.Certificates) > 0 {
		cert = &cfg.Certificates[0]
	}
	cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		v.asked = true
		return cert, nil
	}
	conn := tls.Client(raw, cfg)
	v.conn = raw
	hctx, cancel := context.WithTimeout(ctx, forwardDialTimeout)
	defer cancel()
	err = conn.HandshakeContext(hctx)
	if err == nil && v.asked && conn.ConnectionState().Version == tls.VersionTLS13 {
		err = v.await(conn)
	}
	if err != nil {
		conn.Close()
		return nil, &forwardRefusedError{reason: forwardRefusalOf(err), err: err}
	}
	return conn, nil
}

// verdict waits for a TLS 1.3 collector's answer to the client certificate
// it asked for: an alert (refused) or a session ticket (accepted; crypto/tls
// hands it to the ClientSessionCache, which this is: it stores nothing, so
// every connection is a full handshake with the files just read).
type verdict struct {
	asked   bool     // the collector asked for a client certificate
	waiting bool     // await is reading
	conn    net.Conn // the TCP connection under the TLS one
}

func (v *verdict) Get(string) (*tls.ClientSessionState, bool) { return nil, false }

// Put is called from inside await's Read when a ticket arrives: it ends
// the Read at once. (A TLS 1.2 handshake may call it too, before await.)
func (v *verdict) Put(string, *tls.ClientSessionState) {
	if v.waiting {
		v.conn.SetReadDeadline(time.Now()) //nolint:errcheck // at worst await waits forwardVerdictWait
	}
}

// await reads until the collector refuses (an alert: the error) or
// forwardVerdictWait passes or a ticket arrives (nil: accepted).
func (v *verdict) await(conn *tls.Conn) error {
	conn.SetReadDeadline(time.Now().Add(forwardVerdictWait)) //nolint:errcheck // a failed read says so
	v.waiting = true
	_, err := conn.Read(make([]byte, 1))
	v.waiting = false
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return conn.SetReadDeadline(time.Time{})
	}
	if err == nil {
		err = errors.New("audit syslog: the collector sent data; a syslog collector sends none")
	}
	return err
}

// forwardRefusedError is a TLS connection to the collector that failed
// after its TCP connection was made.
type forwardRefusedError struct {
	reason string // a ForwardRefusal
	err    error
}

func (e *forwardRefusedError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *forwardRefusedError) Unwrap() error { return e.err }

// forwardRefusalOf is the reason a handshake failed with err.
func forwardRefusalOf(err error) string {
	var (
		verify *tls.CertificateVerificationError
		op     *net.OpError
	)
	switch {
	case errors.As(err, &verify): // crypto/tls's error for the collector's certificate refused
		if r := certrefusal.Reason(verify.Err, time.Now()); r != certrefusal.BadUsage {
			return r
		}
		return ForwardBadCertificate // ForwardRefusals has no bad-usage
	case errors.As(err, &op) && op.Op == "remote error": // crypto/tls's error for an alert received
		return ForwardCollectorRefused
	}
	return ForwardHandshakeFailed
}
