package cli

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"paymentlog/client"
	"paymentlog/client/clienttest"
	"paymentlog/node"
	"paymentlog/quic"
	"paymentlog/wire"
)

// acl's usage errors: exit status 2, one line on stderr naming what is
// wrong, nothing on stdout, and no request sent (the bootstrap address
// answers nothing).
func TestACLUsageErrors(t *testing.T) {
	bs := "--bootstrap=127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--operation", "read", "--topic", "t"}, "missing --principal"},
		{[]string{"add", "--principal", "billing", "--topic", "t"}, "missing --operation"},
		{[]string{"add", "--principal", "billing", "--operation", "read"}, "missing a resource (--topic, --group or --cluster)"},
		{[]string{"add"}, "missing --principal, --operation, a resource"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "t", "--group", "g"}, "--topic and --group: give one"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "t", "--cluster"}, "--topic and --cluster: give one"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "t", "--allow", "--deny"}, "--allow and --deny: give one"},
		{[]string{"add", "--principal", "billing", "--operation", "fly", "--topic", "t"}, `operation "fly" on a topic: want one of all, read, write`},
		{[]string{"add", "--principal", "billing", "--operation", "read,write", "--group", "g"}, `operation "write" on a group: want one of all, read, delete, describe`},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--cluster"}, `operation "read" on a cluster`},
		{[]string{"add", "--principal", "billing", "--operation", ",", "--topic", "t"}, "--operation: no operation given"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "bad/name"}, "topic name"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", ""}, "--topic: empty name"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "*", "--prefixed"}, `"*" is a literal name`},
		{[]string{"add", "--principal", "billing", "--operation", "alter", "--cluster", "--prefixed"}, "the cluster is one resource"},
		{[]string{"add", "--principal", "Group:ops", "--operation", "read", "--topic", "t"}, "--principal: principal"},
		{[]string{"add", "--principal", "User:", "--operation", "read", "--topic", "t"}, "empty name after User:"},
		{[]string{"add", "--principal", "", "--operation", "read", "--topic", "t"}, "--principal"},
		{[]string{"add", "extra", "--principal", "billing", "--operation", "read", "--topic", "t"}, "acl add takes no arguments (got extra)"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "t", "--literal"}, "flag provided but not defined: --literal"},
		{[]string{"remove"}, "give at least one selector"},
		{[]string{"remove", "--all", "--topic", "t"}, "--all removes every ACL: give it without selectors"},
		{[]string{"remove", "--operation", "fly"}, `operation "fly": want one of`},
		{[]string{"remove", "--group", "g", "--operation", "write"}, `operation "write" on a group`},
		{[]string{"remove", "--topic", "t", "--prefixed", "--literal"}, "--prefixed and --literal: give one"},
		{[]string{"remove", "--principal", "a:b"}, "--principal"},
		{[]string{"list", "--topic", "a", "--group", "b"}, "give one"},
		{[]string{"list", "--all"}, "flag provided but not defined: --all"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "t", "--host", "10.1.2.3/16"}, "--host: host \"10.1.2.3/16\": write the network as 10.1.0.0/16"},
		{[]string{"add", "--principal", "billing", "--operation", "read", "--topic", "t", "--host", "checkout.internal"}, "not an IP address or CIDR network"},
		{[]string{"remove", "--host", ""}, "--host: empty (* is every host)"},
		{[]string{"list", "x"}, "acl list takes no arguments"},
		{[]string{"bogus"}, `unknown command "bogus" (want one of: add, remove, list)`},
	} {
		args := append([]string{"acl"}, c.args...)
		if c.args[0] != "bogus" {
			args = append(args, bs)
		}
		out, errOut, code := runClientCLI(t, nil, args...)
		if out != "" {
			t.Errorf("acl %v: stdout %q", c.args, out)
		}
		oneErrorLine(t, "acl "+strings.Join(c.args, " "), code, errOut, 2, c.want)
	}
}

// The principal is NAME or User:NAME, * or User:* for every client.
func TestNormalizePrincipal(t *testing.T) {
	for in, want := range map[string]string{"billing": "User:billing", "User:billing": "User:billing", "*": "User:*",
		"User:*": "User:*", "CN with spaces": "User:CN with spaces"} {
		if got, err := normalizePrincipal(in); err != nil || got != want {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "User:", "Group:x", "svc:billing"} {
		if got, err := normalizePrincipal(in); err == nil {
			t.Errorf("%q: %q, want an error", in, got)
		}
	}
}

// aclRunner runs acl subcommands against fc, failing the test unless one
// exits 0 with nothing on stderr; it returns stdout.
func aclRunner(t *testing.T, fc *clienttest.Cluster) func(args ...string) string {
	bs := "--bootstrap=" + fc.Bootstrap()
	return func(args ...string) string {
		t.Helper()
		out, errOut, code := runClientCLI(t, nil, append(append([]string{"acl"}, args...), bs)...)
		if code != 0 || errOut != "" {
			t.Fatalf("acl %v: exit %d, stderr %q", args, code, errOut)
		}
		return out
	}
}

// acl add, list and remove against a fake cluster: several operations make
// several bindings in one request, a repeat creates none, list prints the
// table and whether the answering node enforces, --json, the selectors of
// remove (flags after the subcommand, omitted ones match anything) and
// --all.
func TestACLCommands(t *testing.T) {
	fc := startFakeCluster(t)
	run := aclRunner(t, fc)
	out := run("add", "--principal", "billing", "--operation", "read,write", "--topic", "payments")
	want := "created 2 ACLs (0 already existed)\n" +
		"PERMISSION  PRINCIPAL     OPERATION  RESOURCE  PATTERN  NAME      HOST\n" +
		"allow       User:billing  read       topic     literal  payments  *\n" +
		"allow       User:billing  write      topic     literal  payments  *\n"
	if out != want {
		t.Fatalf("add:\n%s\nwant:\n%s", out, want)
	}
	if out := run("add", "--principal", "User:billing", "--operation", "write", "--operation", "describe", "--topic", "payments"); !strings.HasPrefix(out, "created 1 ACL (1 already existed)\n") {
		t.Fatalf("add again: %q", out)
	}
	run("add", "--principal", "*", "--deny", "--operation", "delete", "--topic", "*")
	run("add", "--principal", "ops", "--operation", "READ", "--group", "billing-", "--prefixed")
	run("add", "--principal", "admin", "--operation", "all", "--cluster")
	if n := len(fc.ACLs()); n != 6 {
		t.Fatalf("the cluster holds %d ACLs: %v", n, fc.ACLs())
	}
	if n := fc.Calls(wire.TypeCreateACLs); n != 5 {
		t.Fatalf("%d CreateACLs requests for 5 adds", n)
	}

	out = run("list")
	for _, line := range []string{
		"PERMISSION  PRINCIPAL     OPERATION  RESOURCE  PATTERN   NAME      HOST\n",
		"allow       User:admin    all        cluster   literal   cluster   *\n",
		"allow       User:ops      read       group     prefixed  billing-  *\n",
		"deny        User:*        delete     topic     literal   *         *\n",
		"allow       User:billing  describe   topic     literal   payments  *\n",
	} {
		if !strings.Contains(out, line) {
			t.Fatalf("list: no line %q in:\n%s", line, out)
		}
	}
	if !strings.HasSuffix(out, "\nauthorization: NOT enforced: nodes run without --authorizer acl, so these ACLs have no effect\n") {
		t.Fatalf("list without enforcement:\n%s", out)
	}
	fc.SetACLsEnforced(true)
	out = run("list", "--principal", "billing", "--operation", "read,write")
	want = "PERMISSION  PRINCIPAL     OPERATION  RESOURCE  PATTERN  NAME      HOST\n" +
		"allow       User:billing  read       topic     literal  payments  *\n" +
		"allow       User:billing  write      topic     literal  payments  *\n" +
		"authorization: enforced on every node that answered (1,2,3; --authorizer acl)\n"
	if out != want {
		t.Fatalf("list --principal billing --operation read,write:\n%s\nwant:\n%s", out, want)
	}
	if out := run("list", "--topic", "nosuch"); out != "no ACLs\nauthorization: enforced on every node that answered (1,2,3; --authorizer acl)\n" {
		t.Fatalf("list of none: %q", out)
	}
	var js struct {
		ACLs     []map[string]string `json:"acls"`
		Enforced bool                `json:"enforced"`
		Node     int32               `json:"node"`
		Nodes    []int32             `json:"enforcing_nodes"`
	}
	if err := json.Unmarshal([]byte(run("list", "--cluster", "--json")), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.ACLs) != 1 || !js.Enforced || js.Node < 1 || len(js.Nodes) != 3 || js.ACLs[0]["principal"] != "User:admin" || js.ACLs[0]["resource_type"] != "cluster" || js.ACLs[0]["host"] != "*" ||
		js.ACLs[0]["pattern_type"] != "literal" || js.ACLs[0]["operation"] != "all" || js.ACLs[0]["permission"] != "allow" || js.ACLs[0]["name"] != "cluster" {
		t.Fatalf("list --json: %+v", js)
	}

	// Selectors: the topic's literal ACLs named as written (not '*').
	out = run("remove", "--topic", "payments", "--operation", "write")
	want = "removed 1 ACL\n" +
		"PERMISSION  PRINCIPAL     OPERATION  RESOURCE  PATTERN  NAME      HOST\n" +
		"allow       User:billing  write      topic     literal  payments  *\n"
	if out != want {
		t.Fatalf("remove:\n%s\nwant:\n%s", out, want)
	}
	if out := run("remove", "--topic", "payments", "--operation", "write"); out != "removed no ACLs: none matched\n" {
		t.Fatalf("remove again: %q", out)
	}
	if out := run("remove", "--deny"); !strings.HasPrefix(out, "removed 1 ACL\n") || !strings.Contains(out, "User:*") {
		t.Fatalf("remove --deny: %q", out)
	}
	if slices.ContainsFunc(fc.ACLs(), func(b wire.ACLBinding) bool { return b.Permission == wire.PermissionDeny }) {
		t.Fatalf("deny left: %v", fc.ACLs())
	}
	if out := run("remove", "--all"); !strings.HasPrefix(out, "removed 4 ACLs\n") || len(fc.ACLs()) != 0 {
		t.Fatalf("remove --all: %q, left %v", out, fc.ACLs())
	}
}

// A refusal by the cluster (a principal that may not change ACLs) exits 1
// with one line naming the code and the node's message.
func TestACLRefused(t *testing.T) {
	fc := startFakeCluster(t)
	fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
		if ty == wire.TypeCreateACLs || ty == wire.TypeDescribeACLs || ty == wire.TypeDeleteACLs {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.ClusterAuthorizationFailed}
		}
		return clienttest.Action{}
	})
	bs := "--bootstrap=" + fc.Bootstrap()
	for _, args := range [][]string{
		{"add", "--principal", "billing", "--operation", "read", "--topic", "t"},
		{"remove", "--all"},
		{"list"},
	} {
		out, errOut, code := runClientCLI(t, nil, append(append([]string{"acl"}, args...), bs, "--timeout", "20s")...)
		if out != "" {
			t.Errorf("acl %v: stdout %q", args, out)
		}
		oneErrorLine(t, "acl "+strings.Join(args, " "), code, errOut, 1, "ClusterAuthorizationFailed: refused by clienttest")
	}
}

// node start --authorizer and --super-users (and their environment
// variables) reach node.Config; bare names are made User:NAME; bad values
// are usage errors.
func TestNodeStartAuthorizerFlags(t *testing.T) {
	defer func(orig func(context.Context, node.Config) (runningNode, error)) { startNode = orig }(startNode)
	var got node.Config
	startNode = func(_ context.Context, cfg node.Config) (runningNode, error) {
		got = cfg
		return nil, errors.New("not started")
	}
	certs := t.TempDir()
	base := []string{"node", "start", "--id", "1", "--addr", "127.0.0.1:1", "--data-dir", t.TempDir(), "--controllers", "1@127.0.0.1:1"}
	start := func(args ...string) (string, int) {
		t.Helper()
		got = node.Config{}
		_, errOut, code := runClientCLI(t, nil, append(slices.Clone(base), args...)...)
		return errOut, code
	}
	if errOut, code := start(); code != 1 || got.Authorizer != node.AuthorizerNone || got.SuperUsers != nil {
		t.Fatalf("defaults: exit %d %q, authorizer %q, super users %v", code, errOut, got.Authorizer, got.SuperUsers)
	}
	if errOut, code := start("--tls-dir", certs, "--authorizer", "acl", "--super-users", "User:admin, ops,admin"); code != 1 ||
		got.Authorizer != node.AuthorizerACL || !slices.Equal(got.SuperUsers, []string{"User:admin", "User:ops"}) {
		t.Fatalf("flags: exit %d %q, authorizer %q, super users %v", code, errOut, got.Authorizer, got.SuperUsers)
	}
	t.Setenv("PAYMENTLOG_AUTHORIZER", "acl")
	t.Setenv("PAYMENTLOG_SUPER_USERS", "root")
	if errOut, code := start("--tls-dir", certs); code != 1 || got.Authorizer != node.AuthorizerACL || !slices.Equal(got.SuperUsers, []string{"User:root"}) {
		t.Fatalf("environment: exit %d %q, authorizer %q, super users %v", code, errOut, got.Authorizer, got.SuperUsers)
	}
	t.Setenv("PAYMENTLOG_AUTHORIZER", "")
	t.Setenv("PAYMENTLOG_SUPER_USERS", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--authorizer", "acl"}, "acl needs --tls-dir"},
		{[]string{"--authorizer", "kerberos"}, `"kerberos": want acl or none`},
		{[]string{"--super-users", "Group:ops"}, "--super-users: principal"},
		{[]string{"--super-users", "*"}, "--super-users: User:* names no one"},
	} {
		errOut, code := start(c.args...)
		oneErrorLine(t, strings.Join(c.args, " "), code, errOut, 2, c.want)
	}
}

// The enforcement line names the nodes that do not enforce ACLs when some
// do (the ACLs are then open through those), and those that did not answer.
func TestEnforcementLine(t *testing.T) {
	for _, c := range []struct {
		e    client.ACLEnforcement
		want string
	}{
		{client.ACLEnforcement{Enforcing: []int32{1, 2, 3}}, "authorization: enforced on every node that answered (1,2,3; --authorizer acl)"},
		{client.ACLEnforcement{NotEnforcing: []int32{1, 2}}, "authorization: NOT enforced: nodes run without --authorizer acl, so these ACLs have no effect"},
		{client.ACLEnforcement{Enforcing: []int32{1, 2}, NotEnforcing: []int32{3}, Unanswered: []int32{4}},
			"authorization: enforced only on nodes 1,2; NOT on node 3, where every client certificate may do everything: " +
				"start every node with --authorizer acl (node 4 did not answer)"},
	} {
		if got := enforcementLine(c.e); got != c.want {
			t.Errorf("enforcementLine(%+v) = %q, want %q", c.e, got, c.want)
		}
	}
}

// acl add --host makes a binding for one address or network, apart from the
// one for every host; list and remove select by host as written (* the
// bindings for every host).
func TestACLHostCommands(t *testing.T) {
	fc := startFakeCluster(t)
	run := aclRunner(t, fc)
	run("add", "--principal", "checkout", "--operation", "write", "--topic", "payments", "--host", "10.1.0.0/16")
	run("add", "--principal", "checkout", "--operation", "write", "--topic", "payments", "--host", "*")
	if out := run("add", "--principal", "checkout", "--operation", "write", "--topic", "payments", "--host", "2001:db8::7"); !strings.Contains(out, "payments  2001:db8::7\n") {
		t.Fatalf("add --host 2001:db8::7:\n%s", out)
	}
	if n := len(fc.ACLs()); n != 3 {
		t.Fatalf("%d ACLs: %v", n, fc.ACLs())
	}
	out := run("list", "--host", "10.1.0.0/16")
	if !strings.Contains(out, "  HOST\n") || !strings.Contains(out, "payments  10.1.0.0/16\n") || strings.Count(out, "payments") != 1 {
		t.Fatalf("list --host 10.1.0.0/16:\n%s", out)
	}
	if out := run("list", "--host", "*"); strings.Count(out, "payments") != 1 || !strings.Contains(out, "payments  *\n") {
		t.Fatalf("list --host '*':\n%s", out)
	}
	if out := run("remove", "--host", "2001:db8::7"); !strings.HasPrefix(out, "removed 1 ACL\n") {
		t.Fatalf("remove --host 2001:db8::7: %q", out)
	}
	if out := run("list"); strings.Count(out, "payments") != 2 || strings.Contains(out, "2001:db8::7") {
		t.Fatalf("list after the remove:\n%s", out)
	}
}
