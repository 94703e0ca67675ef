package node_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/node/audit"
	"paymentlog/quic"
)

// mustServeImpostor serves QUIC at a random 127.0.0.1 port presenting the
// certificate name of the TLS directory dir, until the test ends.
func mustServeImpostor(t *testing.T, dir, name string) string {
	t.Helper()
	ep, err := quic.New(context.Background(), quic.Config{Addr: "127.0.0.1:0", TLS: quic.TLSConfig{Dir: dir, Name: name},
		TLSReloadInterval: -1, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ep.Serve(context.Background()) }()
	t.Cleanup(func() {
		ep.Close()
		<-done
	})
	return ep.Addr()
}

// A node refusing the certificate of a peer it dials (here controller 2's
// address, served by an impostor) records it in its audit trail, as an
// outbound denied connect with the address dialed, the name checked and the
// certificate presented, once a minute however often raft dials again, and
// counts every refusal in paymentlog_tls_handshakes_refused_total, also
// without --audit-log: a certificate of another CA (unknown-ca), and one of
// the cluster's CA issued for another address (name-mismatch).
func TestAuditRecordsOutboundRefusals(t *testing.T) {
	certs := mustACLCerts(t, 1)
	stranger := t.TempDir()
	if err := quic.InitCA(stranger, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := quic.IssueCert(stranger, "node2", []string{"127.0.0.1"}, quic.CertOptions{NodeID: 2}); err != nil {
		t.Fatal(err)
	}
	misnamed := t.TempDir() // the cluster's CA, node2 issued for another host
	for _, f := range []string{quic.CAFile, quic.CAKeyFile} {
		if err := os.WriteFile(filepath.Join(misnamed, f), mustRead(t, filepath.Join(certs, f)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := quic.IssueCert(misnamed, "node2", []string{"node2.example"}, quic.CertOptions{NodeID: 2}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		dir, reason string
		auditLog    bool
	}{{stranger, quic.RefusedUnknownCA, true}, {misnamed, quic.RefusedNameMismatch, false}} {
		t.Run(c.reason, func(t *testing.T) {
			impostor := mustServeImpostor(t, c.dir, "node2")
			leaf, err := quic.ReadCert(c.dir, "node2")
			if err != nil {
				t.Fatal(err)
			}
			path := ""
			tc := mustStartClusterWith(t, 1, func(cfg *node.Config) {
				cfg.TLSDir, cfg.CertName = certs, "node1"
				cfg.TLSReloadInterval = -1
				cfg.MetricsAddr = "127.0.0.1:0"
				cfg.Controllers = maps.Clone(cfg.Controllers)
				cfg.Controllers[2] = impostor
				if c.auditLog {
					cfg.AuditLog = filepath.Join(t.TempDir(), "audit1.log")
					path = cfg.AuditLog
				}
			})
			refused := func() float64 {
				return value(t, scrape(t, tc.node(1).MetricsAddr()), "paymentlog_tls_handshakes_refused_total", "side", "outbound", "reason", c.reason)
			}
			denied := func() []auditLine {
				var out []auditLine
				if path == "" {
					return nil
				}
				for _, l := range linesOf(t, path) {
					if l.Event == audit.EventDenied {
						out = append(out, l)
					}
				}
				return out
			}
			// Raft dials controller 2 again and again: every refusal
			// counted, one written.
			waitFor(t, "refused dials of the impostor counted (and written)", 30*time.Second, func() bool {
				return refused() >= 3 && (!c.auditLog || len(denied()) > 0)
			})
			e := scrape(t, tc.node(1).MetricsAddr())
			for _, r := range quic.InboundRefusals {
				if v := value(t, e, "paymentlog_tls_handshakes_refused_total", "side", "inbound", "reason", r); v != 0 {
					t.Fatalf("inbound %s refusals %v; want 0", r, v)
				}
			}
			if !c.auditLog {
				return
			}
			connects := denied()
			if len(connects) != 1 {
				t.Fatalf("denied lines %v; want one for the impostor's refusals within a minute", connects)
			}
			l := connects[0]
			var d audit.ConnectDetails
			if err := json.Unmarshal(l.Details, &d); err != nil || l.Op != audit.OpConnect || l.Result != c.reason || l.Addr != impostor ||
				l.Principal != "User:node2" || l.Authenticated || l.Resource != "cluster" || d.Side != audit.SideOutbound ||
				d.ServerName != "127.0.0.1" || d.Serial != leaf.SerialNumber.Text(16) || d.Issuer != leaf.Issuer.String() || d.NotAfter == "" {
				t.Fatalf("denied line %v %s; want the impostor's outbound connect, %s, to %s, with its serial and issuer", l, l.Details, c.reason, impostor)
			}
			if _, err := audit.VerifyTrail(path); err != nil {
				t.Fatal(err)
			}
			t.Logf("%v refused dials, one audit line", refused())
		})
	}
}
