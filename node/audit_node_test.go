package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/node/audit"
	"paymentlog/node/audit/audittest"
	"paymentlog/quic"
)

// linesOf reads one node's audit file (readAudit).
func linesOf(t *testing.T, path string) []auditLine {
	t.Helper()
	var id int32
	if _, err := fmt.Sscanf(filepath.Base(path), "audit%d.log", &id); err != nil {
		t.Fatalf("audit file %s: %v", path, err)
	}
	return readAudit(t, map[int32]string{id: path})
}

// The audit trail's node and access lines (PCI DSS 10.2.1.1, .5, .6): each
// node's file starts with its start line, saying how the run before ended
// (a new file, stopped, or killed); a controlled shutdown ends it with a
// stop line; a TLS reload that puts a revocation in force is recorded; and
// a client's reads and writes of a topic are recorded once per connection
// on the node that served them, without ACLs, while replication is not.
func TestAuditTrailNodeAndAccessLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 3, "app", "mallory")
	dir := t.TempDir()
	paths := map[int32]string{}
	syslog := audittest.Listen(t, "127.0.0.1:0") // node 1 forwards its lines there
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
		c.TLSReloadInterval = -1 // reloads only when the test asks
		c.AuditLog = filepath.Join(dir, fmt.Sprintf("audit%d.log", c.ID))
		c.Version = "test-build"
		if c.ID == 1 {
			c.AuditSyslog = "tcp://" + syslog.Addr()
		}
		paths[c.ID] = c.AuditLog
	})
	tc.waitAlive(3)
	for id, p := range paths {
		first := linesOf(t, p)[0]
		var d audit.StartDetails
		if err := json.Unmarshal(first.Details, &d); err != nil || first.Event != audit.EventNode || first.Op != audit.OpStart ||
			first.Principal != fmt.Sprintf("User:node%d", id) || !first.Authenticated || first.Addr != tc.addrs[id] ||
			d.Previous != audit.PreviousNone || d.Version != "test-build" || d.PID != os.Getpid() {
			t.Fatalf("node %d's first line %v %s; want its start line, a new audit log", id, first, first.Details)
		}
	}

	app := aclClient(ctx, t, tc, certs, "app")
	createTopic(ctx, t, tc, app, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	for i := range 3 {
		if err := produceAs(ctx, app, "payments", fmt.Sprintf("p%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := consumeFrom(ctx, app, "payments", 3); err != nil {
		t.Fatal(err)
	}
	part, _ := tc.image().Partition("payments", 0)
	var access []auditLine
	for id, p := range paths {
		for _, l := range linesOf(t, p) {
			if l.Event != audit.EventAccess {
				continue
			}
			if l.Node != part.Leader || l.Principal != "User:app" || !l.Authenticated || l.Resource != "topic" ||
				l.ResourceName != "payments" || l.Result != audit.ResultOK {
				t.Fatalf("node %d: access line %v; want app's, on the leader %d", id, l, part.Leader)
			}
			access = append(access, l)
		}
	}
	if len(access) != 2 || access[0].Op != "write" || access[1].Op != "read" || access[0].Addr != access[1].Addr {
		t.Fatalf("access lines %v; want one write then one read, from app's one connection", access)
	}

	// Revoking mallory's certificate: the reload that puts it in force is
	// recorded, with what changed.
	mc, err := quic.ReadCert(certs, "mallory")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := quic.RevokeCert(certs, mc.SerialNumber, "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	if changed, err := tc.node(1).ReloadTLS(); !changed || err != nil {
		t.Fatalf("reload: %v %v", changed, err)
	}
	ls := linesOf(t, paths[1])
	rl := ls[len(ls)-1]
	var ev quic.TLSReload
	if err := json.Unmarshal(rl.Details, &ev); err != nil || rl.Op != audit.OpTLSReload || rl.Result != audit.ResultOK ||
		!ev.RevokedChanged || ev.CAChanged || ev.Revoked != 1 || ev.Serial == "" || ev.Serial != ev.PreviousSerial {
		t.Fatalf("node 1's last line %v %s; want a tls-reload with one revoked serial", rl, rl.Details)
	}
	// mallory's handshakes are refused, and recorded as denied connects.
	for _, id := range []int32{2, 3} {
		if changed, err := tc.node(id).ReloadTLS(); !changed || err != nil {
			t.Fatalf("reload node %d: %v %v", id, changed, err)
		}
	}
	mctx, mcancel := context.WithTimeout(ctx, 5*time.Second)
	if mal, err := client.New(mctx, client.Config{Bootstrap: tc.bootstrap(), Logger: testLogger(t),
		TLS: quic.TLSConfig{Dir: certs, Name: "mallory"}}); err == nil {
		_, err = mal.Admin().ListTopics(mctx)
		mal.Close(context.Background())
		if err == nil {
			t.Fatal("a revoked certificate listed the topics")
		}
	}
	mcancel()
	var connects []auditLine
	for _, p := range paths {
		for _, l := range linesOf(t, p) {
			if l.Event == audit.EventDenied {
				connects = append(connects, l)
			}
		}
	}
	if len(connects) == 0 {
		t.Fatal("no denied line for mallory's refused handshakes")
	}
	for _, l := range connects {
		if l.Op != audit.OpConnect || l.Principal != "User:mallory" || l.Authenticated || !strings.HasPrefix(l.Addr, "127.0.0.1:") ||
			l.Resource != "cluster" || l.Result != audit.ResultRevoked || !strings.Contains(l.Message, "revoked") {
			t.Fatalf("denied line %v; want mallory's connect from 127.0.0.1, revoked", l)
		}
	}

	// A client whose certificate another CA signed is refused inside the
	// TLS library's chain verification: also recorded, with the
	// certificate's name, serial and issuer, and once a minute per node
	// however often the client retries.
	stranger := t.TempDir()
	if err := quic.InitCA(stranger, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := quic.IssueCert(stranger, "stranger", nil, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	sc, err := quic.ReadCert(stranger, "stranger")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stranger, quic.CAFile), mustRead(t, filepath.Join(certs, quic.CAFile)), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		if cl, err := client.New(sctx, client.Config{Bootstrap: tc.bootstrap(), Logger: testLogger(t),
			TLS: quic.TLSConfig{Dir: stranger, Name: "stranger"}}); err == nil {
			_, err = cl.Admin().ListTopics(sctx)
			cl.Close(context.Background())
			if err == nil {
				t.Fatal("a certificate of another CA listed the topics")
			}
		}
		scancel()
	}
	unknown := 0
	for id, p := range paths {
		perNode := 0
		for _, l := range linesOf(t, p) {
			if l.Event != audit.EventDenied || l.Result != "unknown-ca" {
				continue
			}
			perNode++
			var d audit.ConnectDetails
			if err := json.Unmarshal(l.Details, &d); err != nil || l.Op != audit.OpConnect || l.Principal != "User:stranger" || l.Authenticated ||
				!strings.HasPrefix(l.Addr, "127.0.0.1:") || d.Serial != sc.SerialNumber.Text(16) || d.Issuer != sc.Issuer.String() || d.NotAfter == "" ||
				d.Side != audit.SideInbound || d.ServerName != "" {
				t.Fatalf("node %d: denied line %v %s; want the stranger's connect, unknown-ca, with its serial and issuer", id, l, l.Details)
			}
		}
		if perNode > 1 {
			t.Fatalf("node %d wrote %d lines for the stranger's retries within a minute; want at most one", id, perNode)
		}
		unknown += perNode
	}
	if unknown == 0 {
		t.Fatal("no denied line for the stranger's refused handshakes")
	}

	// Node 1 sent every line of its file to the syslog collector, in order.
	file := strings.Split(strings.TrimSpace(string(mustRead(t, paths[1]))), "\n")
	for i, want := range file {
		if got := syslog.Next(t); !strings.HasSuffix(got, " paymentlog "+fmt.Sprint(os.Getpid())+" audit - "+want) {
			t.Fatalf("syslog message %d: %q; want the file's line %q", i+1, got, want)
		}
	}

	// A controlled shutdown writes a stop line and the next start says so;
	// a killed node's next start says it ended without one.
	n2 := tc.node(2)
	tc.mu.Lock()
	delete(tc.nodes, 2)
	tc.mu.Unlock()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	n2.Shutdown(sctx)
	scancel()
	ls = linesOf(t, paths[2])
	if last := ls[len(ls)-1]; last.Op != audit.OpStop || last.Result != audit.ResultOK {
		t.Fatalf("node 2's last line after its shutdown: %v", last)
	}
	tc.kill(3)
	tc.start(2)
	tc.start(3)
	for id, want := range map[int32]string{2: audit.PreviousStopped, 3: audit.PreviousNoStop} {
		ls := linesOf(t, paths[id])
		st := ls[len(ls)-1]
		var d audit.StartDetails
		if err := json.Unmarshal(st.Details, &d); err != nil || st.Op != audit.OpStart || d.Previous != want {
			t.Fatalf("node %d's start line %v %s; want previous %q", id, st, st.Details, want)
		}
	}
	for id, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = audit.VerifyChain(f)
		f.Close()
		if err != nil {
			t.Fatalf("node %d's chain: %v", id, err)
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
