package audit

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/node/audit/audittest"
	"paymentlog/quic"
)

// mustTLSDir makes a CA in a new directory and issues, signed by it, the
// certificate name (server and client usage) for hosts.
func mustTLSDir(t *testing.T, name string, hosts ...string) string {
	t.Helper()
	dir := t.TempDir()
	if err := quic.InitCA(dir, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := quic.IssueCert(dir, name, hosts, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// collectorTLS is a collector's configuration: the certificate name of
// dir; with clientCAs, it requires a client certificate of that CA.
func collectorTLS(t *testing.T, dir, name string, clientCAs string) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key"))
	if err != nil {
		t.Fatal(err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != "" {
		c.ClientCAs = x509.NewCertPool()
		if !c.ClientCAs.AppendCertsFromPEM(readFile(t, filepath.Join(clientCAs, quic.CAFile))) {
			t.Fatal("no CA")
		}
		c.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return c
}

// syncBuffer is a log destination for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// mustForwardingLog opens an audit file forwarding to addr with t, logging
// to the buffer returned.
func mustForwardingLog(tb *testing.T, addr string, t ForwardTLS) (*Log, string, *syncBuffer) {
	tb.Helper()
	logs := &syncBuffer{}
	path := filepath.Join(tb.TempDir(), "audit.log")
	l, err := Open(path, 1, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	if err := l.ForwardTo(addr, t); err != nil {
		tb.Fatal(err)
	}
	return l, path, logs
}

// waitRefused waits until l has counted a refused TLS connection for
// reason, and checks that none of another reason was counted.
func waitRefused(t *testing.T, l *Log, reason string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := l.Counts().ForwardTLSRefused
		for i, r := range ForwardRefusals {
			if r != reason && c[i] != 0 {
				t.Fatalf("refusals %v (%v); want only %s", c, ForwardRefusals, reason)
			}
		}
		if c[slices.Index(ForwardRefusals[:], reason)] > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no TLS connection refused for %s in 20 s (counts %+v)", reason, l.Counts())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// mustBeRefused opens an audit file forwarding to col with ft, writes a
// line, waits for the refusal (reason) and checks that it was logged once,
// as an error naming the collector and the reason, and that no line was
// forwarded.
func mustBeRefused(t *testing.T, col *audittest.Collector, ft ForwardTLS, reason string) *Log {
	t.Helper()
	l, _, logs := mustForwardingLog(t, "tls://"+col.Addr(), ft)
	l.Started(Who{Principal: "User:node1"}, "v")
	waitRefused(t, l, reason)
	var errs []string
	for _, ln := range strings.Split(logs.String(), "\n") {
		if strings.Contains(ln, "level=ERROR") {
			errs = append(errs, ln)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "addr=tls://"+col.Addr()) || !strings.Contains(errs[0], "reason="+reason) {
		t.Fatalf("error log lines %q; want one naming tls://%s and %s", errs, col.Addr(), reason)
	}
	// (The collector never completes a refused handshake, so it reads no
	// frame to check: the count says whether a line went.)
	if c := l.Counts(); c.Forwarded != 0 {
		t.Fatalf("counts %+v: lines counted as forwarded over a refused connection", c)
	}
	return l
}

// Over TLS (RFC 5425): TLS 1.3, the collector's certificate verified
// against the CA file, and each line, byte for byte and in order, in an
// octet-counted frame.
func TestForwardToSyslogOverTLS(t *testing.T) {
	dir := mustTLSDir(t, "collector", "127.0.0.1")
	cfg := collectorTLS(t, dir, "collector", "")
	versions := make(chan uint16, 10)
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		versions <- cs.Version
		return nil
	}
	col := audittest.ListenTLS(t, "127.0.0.1:0", cfg)
	l, path, _ := mustForwardingLog(t, "tls://"+col.Addr(), ForwardTLS{CAFile: filepath.Join(dir, quic.CAFile)})
	who := Who{Principal: "User:ops", Authenticated: true, Addr: "127.0.0.1:5000"}
	l.Admin(who, "CreateTopic", map[string]string{"Name": "payments"}, nil, ResultOK, "")
	l.Denied(who, "write", "topic", "payments", "TopicAuthorizationFailed", "no")
	file := fileLines(t, path)
	for i, want := range []int{priInfo, priWarning} {
		pri, msg := syslogMsg(t, col.Next(t))
		if pri != want || msg != file[i] {
			t.Fatalf("message %d: pri %d, %q; want pri %d, the file's line %q", i+1, pri, msg, want, file[i])
		}
	}
	if v := <-versions; v != tls.VersionTLS13 {
		t.Fatalf("TLS version %x; want 1.3", v)
	}
}

// A collector below TLS 1.2 is refused.
func TestForwardOverTLSRefusesOldVersions(t *testing.T) {
	dir := mustTLSDir(t, "collector", "127.0.0.1")
	cfg := collectorTLS(t, dir, "collector", "")
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	col := audittest.ListenTLS(t, "127.0.0.1:0", cfg)
	mustBeRefused(t, col, ForwardTLS{CAFile: filepath.Join(dir, quic.CAFile)}, ForwardCollectorRefused)
}

// A collector whose certificate is of another CA is refused, logged once
// and counted at every retry; once the CA file names its CA (rotated on
// disk, no restart), the next retry reads it and the lines go through.
func TestForwardOverTLSRefusesAnotherCA(t *testing.T) {
	ours := mustTLSDir(t, "unused", "127.0.0.1")
	theirs := mustTLSDir(t, "collector", "127.0.0.1")
	col := audittest.ListenTLS(t, "127.0.0.1:0", collectorTLS(t, theirs, "collector", ""))
	caFile := filepath.Join(t.TempDir(), "collector-ca.pem")
	if err := os.WriteFile(caFile, readFile(t, filepath.Join(ours, quic.CAFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	l := mustBeRefused(t, col, ForwardTLS{CAFile: caFile}, ForwardUnknownCA)
	deadline := time.Now().Add(20 * time.Second)
	for l.Counts().ForwardTLSRefused[slices.Index(ForwardRefusals[:], ForwardUnknownCA)] < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the refused collector was not tried again")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(caFile, readFile(t, filepath.Join(theirs, quic.CAFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, msg := syslogMsg(t, col.Next(t)); msg != fileLines(t, l.path)[0] {
		t.Fatalf("after the CA file was rotated the collector got %q; want the queued line", msg)
	}
}

// A collector of the right CA but whose certificate is for another name is
// refused; told that name (--audit-syslog-server-name), the node accepts it.
func TestForwardOverTLSChecksTheServerName(t *testing.T) {
	dir := mustTLSDir(t, "collector", "logs.example")
	col := audittest.ListenTLS(t, "127.0.0.1:0", collectorTLS(t, dir, "collector", ""))
	ca := filepath.Join(dir, quic.CAFile)

	mustBeRefused(t, col, ForwardTLS{CAFile: ca}, ForwardNameMismatch).Close()

	named, path, _ := mustForwardingLog(t, "tls://"+col.Addr(), ForwardTLS{CAFile: ca, ServerName: "logs.example"})
	named.Started(Who{Principal: "User:node1"}, "v")
	if _, msg := syslogMsg(t, col.Next(t)); msg != fileLines(t, path)[0] {
		t.Fatalf("the collector got %q; want the line", msg)
	}
}

// A collector that requires a client certificate gets the node's
// (--audit-syslog-cert/-key) and accepts it; a node without one is
// refused, though under TLS 1.3 its own handshake succeeds: the refusal
// comes after, and no line is lost to it or counted as forwarded.
func TestForwardOverMutualTLS(t *testing.T) {
	dir := mustTLSDir(t, "collector", "127.0.0.1")
	if err := quic.IssueCert(dir, "node1", nil, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	clients := make(chan string, 10)
	cfg := collectorTLS(t, dir, "collector", dir)
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		clients <- cs.PeerCertificates[0].Subject.CommonName
		return nil
	}
	col := audittest.ListenTLS(t, "127.0.0.1:0", cfg)
	ca := filepath.Join(dir, quic.CAFile)

	mustBeRefused(t, col, ForwardTLS{CAFile: ca}, ForwardCollectorRefused).Close()

	start := time.Now()
	l, path, _ := mustForwardingLog(t, "tls://"+col.Addr(), ForwardTLS{CAFile: ca,
		CertFile: filepath.Join(dir, "node1.crt"), KeyFile: filepath.Join(dir, "node1.key")})
	l.Started(Who{Principal: "User:node1"}, "v")
	if _, msg := syslogMsg(t, col.Next(t)); msg != fileLines(t, path)[0] {
		t.Fatalf("the collector got %q; want the line", msg)
	}
	if cn := <-clients; cn != "node1" {
		t.Fatalf("client certificate %q; want node1", cn)
	}
	t.Logf("first line through mutual TLS after %v (the collector's session ticket ends the wait for its verdict)", time.Since(start))
}

func TestForwardTLSCheck(t *testing.T) {
	dir := mustTLSDir(t, "node1")
	ca, crt, key := filepath.Join(dir, quic.CAFile), filepath.Join(dir, "node1.crt"), filepath.Join(dir, "node1.key")
	for _, c := range []struct {
		addr string
		t    ForwardTLS
		ok   bool
	}{
		{"tls://127.0.0.1:6514", ForwardTLS{}, true},
		{"tls://logs.example:6514", ForwardTLS{CAFile: ca, ServerName: "x", CertFile: crt, KeyFile: key}, true},
		{"tcp://127.0.0.1:514", ForwardTLS{}, true},
		{"tcp://127.0.0.1:514", ForwardTLS{CAFile: ca}, false},
		{"udp://127.0.0.1:514", ForwardTLS{ServerName: "x"}, false},
		{"tls://127.0.0.1:6514", ForwardTLS{CertFile: crt}, false},
		{"tls://127.0.0.1:6514", ForwardTLS{KeyFile: key}, false},
		{"tls://127.0.0.1:6514", ForwardTLS{CAFile: key}, false},
		{"tls://127.0.0.1:6514", ForwardTLS{CAFile: filepath.Join(dir, "missing")}, false},
		{"tls://127.0.0.1:6514", ForwardTLS{CertFile: crt, KeyFile: ca}, false},
		{"tls://127.0.0.1", ForwardTLS{}, false},
		{"https://127.0.0.1:6514", ForwardTLS{CAFile: ca}, false},
	} {
		err := c.t.Check(c.addr)
		if (err == nil) != c.ok || (err != nil && strings.Contains(err.Error(), "\n")) {
			t.Errorf("%s %+v: %v; want ok %v, one line", c.addr, c.t, err, c.ok)
		}
		// ForwardTo refuses what Check refuses, with the same error.
		f, ferr := newForwarder(c.addr, c.t, 1, slog.New(slog.DiscardHandler))
		if f != nil {
			f.close()
		}
		if fmt.Sprint(ferr) != fmt.Sprint(err) {
			t.Errorf("%s %+v: newForwarder: %v; want Check's %v", c.addr, c.t, ferr, err)
		}
	}
}

// TestForwardRefusalOf checks the reason of each kind of failed handshake,
// as crypto/tls fails it, and that every reason is one /metrics lists: a
// collector's certificate not for servers has no bad-usage label here.
func TestForwardRefusalOf(t *testing.T) {
	refused := func(err error) error { return &tls.CertificateVerificationError{Err: err} }
	dated := func(notBefore time.Time) error {
		return refused(x509.CertificateInvalidError{Cert: &x509.Certificate{NotBefore: notBefore}, Reason: x509.Expired})
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{refused(x509.UnknownAuthorityError{}), ForwardUnknownCA},
		{dated(time.Now().Add(-time.Hour)), ForwardExpired},
		{dated(time.Now().Add(time.Hour)), ForwardNotYetValid},
		{refused(x509.HostnameError{Host: "logs.example"}), ForwardNameMismatch},
		{refused(x509.CertificateInvalidError{Reason: x509.IncompatibleUsage}), ForwardBadCertificate},
		{refused(x509.CertificateInvalidError{Reason: x509.NotAuthorizedToSign}), ForwardBadCertificate},
		{&net.OpError{Op: "remote error", Err: tls.AlertError(42)}, ForwardCollectorRefused},
		{errors.New("tls: first record does not look like a TLS handshake"), ForwardHandshakeFailed},
	} {
		got := forwardRefusalOf(c.err)
		if got != c.want || !slices.Contains(ForwardRefusals[:], got) {
			t.Errorf("forwardRefusalOf(%v) = %s; want %s, one of %v", c.err, got, c.want, ForwardRefusals)
		}
	}
}
