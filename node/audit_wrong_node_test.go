package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/node/audit"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A valid certificate for the wrong node: node 3's certificate (the
// cluster's CA, for 127.0.0.1) held by a peer that is not node 3. Serving
// at controller 2's address, it is what node 1 reaches when raft dials node
// 2 (outbound); calling node 1 as broker 2, it is refused by the handler
// that binds the broker id to the certificate (inbound). Each call is
// refused, counted in paymentlog_tls_handshakes_refused_total{reason=
// "wrong-node"} and recorded as a denied connect, once a minute per side
// however often it comes again.
func TestAuditRecordsAValidCertificateForTheWrongNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 3)
	impostor := mustServeImpostor(t, certs, "node3")
	leaf, err := quic.ReadCert(certs, "node3")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit1.log")
	tc := mustStartClusterWith(t, 1, func(cfg *node.Config) {
		cfg.TLSDir, cfg.CertName = certs, "node1"
		cfg.TLSReloadInterval = -1
		cfg.MetricsAddr = "127.0.0.1:0"
		cfg.Controllers = maps.Clone(cfg.Controllers)
		cfg.Controllers[2] = impostor
		cfg.AuditLog = path
	})
	refused := func(side string) float64 {
		return value(t, scrape(t, tc.node(1).MetricsAddr()), "paymentlog_tls_handshakes_refused_total", "side", side, "reason", quic.RefusedWrongNode)
	}
	denied := func(side string) []auditLine {
		var out []auditLine
		for _, l := range linesOf(t, path) {
			var d audit.ConnectDetails
			if l.Event == audit.EventDenied && json.Unmarshal(l.Details, &d) == nil && d.Side == side {
				out = append(out, l)
			}
		}
		return out
	}
	checkLine := func(l auditLine, side, addr string) {
		t.Helper()
		var d audit.ConnectDetails
		if err := json.Unmarshal(l.Details, &d); err != nil || l.Op != audit.OpConnect || l.Result != quic.RefusedWrongNode ||
			!strings.HasPrefix(l.Addr, addr) || l.Principal != "User:node3" || l.Authenticated || l.Resource != "cluster" || l.Message == "" ||
			d.Side != side || d.ExpectedNode != 2 || d.Serial != leaf.SerialNumber.Text(16) || d.Issuer != leaf.Issuer.String() || d.NotAfter == "" {
			t.Fatalf("denied line %v %s; want node 3's certificate refused as node 2, %s, at %s", l, l.Details, side, addr)
		}
	}

	// Outbound: raft dials controller 2 again and again.
	waitFor(t, "node 1's dials of node 2 answered by node 3's certificate counted and written", 30*time.Second, func() bool {
		return refused(quic.SideOutbound) >= 3 && len(denied(audit.SideOutbound)) > 0
	})
	out := denied(audit.SideOutbound)
	if len(out) != 1 {
		t.Fatalf("outbound denied lines %v; want one within a minute", out)
	}
	checkLine(out[0], audit.SideOutbound, impostor)

	// Inbound: node 3's certificate sends node 2's heartbeats.
	sender := mustEndpoint(t, certs, "node3")
	for range 3 {
		var hb wire.BrokerHeartbeatResponse
		err := sender.Call(ctx, tc.addrs[1], wire.TypeBrokerHeartbeat, wire.BrokerHeartbeatRequest{BrokerID: 2}, &hb)
		if !errors.Is(err, quic.ErrClusterAuthorizationFailed) {
			t.Fatalf("heartbeat as broker 2 under node 3's certificate: %v; want ErrClusterAuthorizationFailed", err)
		}
	}
	if n := refused(quic.SideInbound); n != 3 {
		t.Fatalf("inbound wrong-node refusals %v; want 3", n)
	}
	in := denied(audit.SideInbound)
	if len(in) != 1 {
		t.Fatalf("inbound denied lines %v; want one for three refusals within a minute", in)
	}
	checkLine(in[0], audit.SideInbound, "127.0.0.1:")
	if _, err := audit.VerifyTrail(path); err != nil {
		t.Fatal(err)
	}
}
