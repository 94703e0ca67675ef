package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/internal/freeport"
	"paymentlog/node"
	"paymentlog/quic"
)

// These tests run `paymentlog acl` against real in-process nodes. They
// need the node side of ACLs: the handlers of frame types 29-31 (ACL
// bindings kept in the metadata log, changed through the active
// controller) and --authorizer acl's enforcement on client requests.
// Against a node without them they fail (the requests are refused as an
// unknown frame type).

// startACLNodes runs nodes 1..n (node 1 the controller) under mutual TLS
// with certificates in a new directory, each enforcing ACLs with
// User:admin a super user, and returns node 1's address and the
// directory: it holds client certificates "admin" and "billing" too.
func startACLNodes(t *testing.T, n int32) (bootstrap, certs string) {
	t.Helper()
	certs = filepath.Join(t.TempDir(), "certs")
	if err := quic.InitCA(certs, quic.CertOptions{}); err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= n; id++ {
		if err := quic.IssueCert(certs, fmt.Sprintf("node%d", id), []string{"127.0.0.1"}, quic.CertOptions{NodeID: id}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"admin", "billing"} {
		if err := quic.IssueCert(certs, name, nil, quic.CertOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addrs := map[int32]string{}
	for id := int32(1); id <= n; id++ {
		addrs[id] = freeport.UDPAddr(t)
	}
	var first *node.Node
	for id := int32(1); id <= n; id++ {
		cfg := node.DefaultConfig()
		cfg.ID, cfg.Addr, cfg.DataDir = id, addrs[id], t.TempDir()
		cfg.Controllers = map[int32]string{1: addrs[1]}
		cfg.TLSDir, cfg.CertName = certs, fmt.Sprintf("node%d", id)
		cfg.Authorizer, cfg.SuperUsers = node.AuthorizerACL, []string{"User:admin"}
		cfg.NoRaftSync = true
		cfg.SegmentBytes = 1 << 20
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		nd, err := node.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nd.Kill)
		if id == 1 {
			first = nd
		}
	}
	// Every broker alive before a test creates a topic with them all
	// (a replication factor above the alive brokers is refused).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		alive := 0
		for _, b := range first.Store().Image().Brokers() {
			if !b.Fenced {
				alive++
			}
		}
		if alive == int(n) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d brokers alive after 30 s", alive, n)
		}
	}
	return addrs[1], certs
}

// A client that no ACL allows anything is refused, naming the code; acl add
// (by a super user) lets it write, and it can, but still not read; acl list
// shows the binding and that the nodes enforce it; acl remove takes the
// permission back. Needs the node handlers (see above).
func TestACLEnforcedOnNodes(t *testing.T) {
	bs, certs := startACLNodes(t, 2)
	as := func(who string, stdin string, args ...string) (string, string, int) {
		t.Helper()
		args = append(args, "--bootstrap="+bs, "--tls-dir", certs, "--cert-name", who)
		if args[0] != "produce" && args[0] != "consume" {
			args = append(args, "--timeout", "30s")
		}
		return runClientCLI(t, strings.NewReader(stdin), args...)
	}
	ok := func(who, stdin string, args ...string) string {
		t.Helper()
		out, errOut, code := as(who, stdin, args...)
		if code != 0 {
			t.Fatalf("%s: %v: exit %d, stderr %q", who, args, code, errOut)
		}
		return out
	}
	refused := func(who, stdin, want string, args ...string) {
		t.Helper()
		_, errOut, code := as(who, stdin, args...)
		oneErrorLine(t, who+": "+strings.Join(args, " "), code, errOut, 1, want)
	}
	ok("admin", "", "topic", "create", "payments", "--partitions", "1", "--replication-factor", "2", "--min-insync-replicas", "1")

	refused("billing", "a\n", "TopicAuthorizationFailed", "produce", "payments")
	refused("billing", "", "ClusterAuthorizationFailed", "acl", "list")
	refused("billing", "", "ClusterAuthorizationFailed", "acl", "add", "--principal", "billing", "--operation", "all", "--topic", "*")

	if out := ok("admin", "", "acl", "add", "--principal", "billing", "--operation", "write", "--topic", "payments"); !strings.HasPrefix(out, "created 1 ACL (0 already existed)\n") {
		t.Fatalf("add: %q", out)
	}
	ok("billing", "a\nb\n", "produce", "payments")
	refused("billing", "", "TopicAuthorizationFailed", "consume", "payments", "--exit-at-end")

	out := ok("admin", "", "acl", "list")
	if !strings.Contains(out, "allow       User:billing  write      topic     literal  payments  *\n") ||
		!strings.HasSuffix(out, "authorization: enforced on every node that answered (1,2; --authorizer acl)\n") {
		t.Fatalf("list:\n%s", out)
	}
	if out := ok("admin", "", "acl", "remove", "--principal", "billing"); !strings.HasPrefix(out, "removed 1 ACL\n") {
		t.Fatalf("remove: %q", out)
	}
	// Every node applied the removal when remove returned.
	refused("billing", "c\n", "TopicAuthorizationFailed", "produce", "payments")

	// Read only: it consumes, and its idempotent producer gets no
	// producer id (write on no topic).
	ok("admin", "", "acl", "add", "--principal", "billing", "--operation", "read", "--topic", "payments")
	if out := ok("billing", "", "consume", "payments", "--exit-at-end"); out != "a\nb\n" {
		t.Fatalf("consume: %q", out)
	}
	refused("billing", "c\n", "ClusterAuthorizationFailed", "produce", "payments")
	// Write on another topic: a producer id, and the Produce refused.
	ok("admin", "", "acl", "add", "--principal", "billing", "--operation", "write", "--topic", "other")
	refused("billing", "c\n", `TopicAuthorizationFailed: principal User:billing may not write topic "payments"`, "produce", "payments")
}

// Nodes started without --authorizer acl keep the ACLs and say they do
// not enforce them. Needs the node handlers (see above).
func TestACLListNotEnforced(t *testing.T) {
	bs := "--bootstrap=" + startNodes(t, 2)
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := runClientCLI(t, nil, append(args, bs, "--timeout", "30s")...)
		if code != 0 {
			t.Fatalf("%v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
	run("acl", "add", "--principal", "billing", "--operation", "read", "--group", "billing-", "--prefixed")
	out := run("acl", "list")
	if !strings.Contains(out, "allow       User:billing  read       group     prefixed  billing-  *\n") ||
		!strings.HasSuffix(out, "\nauthorization: NOT enforced: nodes run without --authorizer acl, so these ACLs have no effect\n") {
		t.Fatalf("list:\n%s", out)
	}
}
