package node_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/node"
	"paymentlog/node/audit"
	"paymentlog/node/audit/audittest"
	"paymentlog/quic"
)

// A node started with --audit-syslog tls:// and its CA and client
// certificate options sends its trail to a collector that requires that
// client certificate (the options reach the forwarder), and lists
// paymentlog_audit_forward_tls_refused_total from 0.
func TestAuditSyslogOverTLSFromANode(t *testing.T) {
	dir := t.TempDir()
	if err := quic.InitCA(dir, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"collector", "audit-sender"} {
		if err := quic.IssueCert(dir, name, []string{"127.0.0.1"}, quic.CertOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "collector.crt"), filepath.Join(dir, "collector.key"))
	if err != nil {
		t.Fatal(err)
	}
	cas := x509.NewCertPool()
	cas.AppendCertsFromPEM(mustRead(t, filepath.Join(dir, quic.CAFile)))
	col := audittest.ListenTLS(t, "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert},
		ClientCAs: cas, ClientAuth: tls.RequireAndVerifyClientCert})

	tc := mustStartClusterWith(t, 1, func(cfg *node.Config) {
		cfg.MetricsAddr = "127.0.0.1:0"
		cfg.AuditSyslog = "tls://" + col.Addr()
		cfg.AuditSyslogTLS = audit.ForwardTLS{CAFile: filepath.Join(dir, quic.CAFile),
			CertFile: filepath.Join(dir, "audit-sender.crt"), KeyFile: filepath.Join(dir, "audit-sender.key")}
	})
	if m := col.Next(t); !strings.Contains(m, `"event":"node"`) || !strings.Contains(m, `"op":"start"`) {
		t.Fatalf("first message %q; want the node's start line", m)
	}
	e := scrape(t, tc.node(1).MetricsAddr())
	for _, r := range audit.ForwardRefusals {
		if v := value(t, e, "paymentlog_audit_forward_tls_refused_total", "reason", r); v != 0 {
			t.Fatalf("refused TLS connections %s: %v; want 0", r, v)
		}
	}
}

// TLS options need a tls:// collector, and files that load.
func TestConfigAuditSyslogTLS(t *testing.T) {
	dir := t.TempDir()
	if err := quic.InitCA(dir, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, quic.CAFile)
	for _, c := range []struct {
		addr string
		tls  audit.ForwardTLS
		ok   bool
	}{
		{"tls://127.0.0.1:6514", audit.ForwardTLS{CAFile: ca, ServerName: "logs.example"}, true},
		{"", audit.ForwardTLS{CAFile: ca}, false},
		{"tcp://127.0.0.1:514", audit.ForwardTLS{CAFile: ca}, false},
		{"tls://127.0.0.1:6514", audit.ForwardTLS{CertFile: ca}, false},
		{"tls://127.0.0.1:6514", audit.ForwardTLS{CAFile: filepath.Join(dir, quic.CAKeyFile)}, false},
	} {
		cfg := node.DefaultConfig()
		cfg.ID, cfg.Addr, cfg.DataDir = 1, "127.0.0.1:9092", t.TempDir()
		cfg.Controllers = map[int32]string{1: cfg.Addr}
		cfg.AuditSyslog, cfg.AuditSyslogTLS = c.addr, c.tls
		err := cfg.Validate()
		var ce *node.ConfigError
		if (err == nil) != c.ok || (err != nil && (!errors.As(err, &ce) || ce.Field != "audit-syslog" || strings.Contains(err.Error(), "\n"))) {
			t.Errorf("%q %+v: %v; want ok %v, else a one-line audit-syslog ConfigError", c.addr, c.tls, err, c.ok)
		}
	}
}
