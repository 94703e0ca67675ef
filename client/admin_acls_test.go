package client

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

func topicACL(principal, op, perm, name string) wire.ACLBinding {
	return wire.ACLBinding{Principal: principal, ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral,
		Name: name, Operation: op, Permission: perm}
}

// CreateACLs goes to the active controller (NotController from another
// node is followed), counts only new bindings (a repeat creates none),
// DescribeACLs filters and reports the answering node and enforcement,
// DeleteACLs returns what it removed.
func TestAdminACLs(t *testing.T) {
	fc := clienttest.New(3)
	fc.SetController(2)
	c := mustFakeClient(t, fc)
	a := c.Admin()
	ctx := testCtx(t)
	read := topicACL("User:billing", wire.OpRead, wire.PermissionAllow, "payments")
	write := topicACL("User:billing", wire.OpWrite, wire.PermissionAllow, "payments")
	deny := topicACL("User:*", wire.OpDelete, wire.PermissionDeny, "*")
	n, err := a.CreateACLs(ctx, []wire.ACLBinding{read, write})
	if err != nil || n != 2 {
		t.Fatalf("create: %d %v", n, err)
	}
	if n, err := a.CreateACLs(ctx, []wire.ACLBinding{read, deny}); err != nil || n != 1 {
		t.Fatalf("create again with one new: %d %v, want 1", n, err)
	}
	if got := fc.ACLs(); len(got) != 3 {
		t.Fatalf("the cluster holds %v", got)
	}
	if fc.Calls(wire.TypeCreateACLs) < 2 {
		t.Fatal("no CreateACLs request")
	}

	l, err := a.DescribeACLs(ctx, wire.ACLFilter{Principal: "User:billing"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.ACLs, []wire.ACLBinding{read, write}) || l.Enforced || l.Node < 1 || l.Addr == "" {
		t.Fatalf("describe User:billing: %+v", l)
	}
	fc.SetACLsEnforced(true)
	if l, err := a.DescribeACLs(ctx, wire.ACLFilter{}); err != nil || len(l.ACLs) != 3 || !l.Enforced {
		t.Fatalf("describe all: %+v %v", l, err)
	}
	if l, err := a.DescribeACLs(ctx, wire.ACLFilter{Name: "nosuch"}); err != nil || l.ACLs == nil || len(l.ACLs) != 0 {
		t.Fatalf("describe none: %+v %v; want an empty, non-nil list", l, err)
	}

	del, err := a.DeleteACLs(ctx, wire.ACLFilter{Operation: wire.OpWrite}, wire.ACLFilter{Permission: wire.PermissionDeny})
	if err != nil || len(del) != 2 || !slices.Contains(del, write) || !slices.Contains(del, deny) {
		t.Fatalf("delete: %v %v", del, err)
	}
	if del, err := a.DeleteACLs(ctx, wire.ACLFilter{Operation: wire.OpWrite}); err != nil || len(del) != 0 {
		t.Fatalf("delete again: %v %v, want nothing and no error", del, err)
	}
	if got := fc.ACLs(); !slices.Equal(got, []wire.ACLBinding{read}) {
		t.Fatalf("left: %v", got)
	}
	if del, err := a.DeleteACLs(ctx); err != nil || del != nil {
		t.Fatalf("delete with no filter: %v %v, want nothing", del, err)
	}
	if del, err := a.DeleteACLs(ctx, wire.ACLFilter{}); err != nil || len(del) != 1 || len(fc.ACLs()) != 0 {
		t.Fatalf("delete with the zero filter: %v %v; left %v", del, err, fc.ACLs())
	}
}

// Invalid bindings are refused before anything is sent, with
// InvalidRequest naming the binding and what is wrong.
func TestAdminCreateACLsInvalid(t *testing.T) {
	fc := clienttest.New(1)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	for _, c2 := range []struct {
		b    wire.ACLBinding
		want string
	}{
		{topicACL("billing", wire.OpRead, wire.PermissionAllow, "payments"), "principal"},
		{topicACL("User:billing", wire.OpRead, wire.PermissionAllow, "bad name"), "topic name"},
		{topicACL("User:billing", "fly", wire.PermissionAllow, "payments"), `operation "fly"`},
		{topicACL("User:billing", wire.OpRead, "maybe", "payments"), `permission "maybe"`},
		{wire.ACLBinding{Principal: "User:x", ResourceType: wire.ResourceGroup, PatternType: wire.PatternLiteral, Name: "g",
			Operation: wire.OpWrite, Permission: wire.PermissionAllow}, "on a group"},
	} {
		_, err := c.Admin().CreateACLs(ctx, []wire.ACLBinding{c2.b})
		if ErrorCode(err) != wire.InvalidRequest || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("%v: %v, want InvalidRequest with %q", c2.b, err, c2.want)
		}
	}
	if n := fc.Calls(wire.TypeCreateACLs); n != 0 {
		t.Fatalf("%d requests sent for invalid bindings", n)
	}
}

// A principal that may not change or list ACLs gets
// ClusterAuthorizationFailed at once, with the node's message: no retry
// until the context ends.
func TestAdminACLsAuthorizationFailedFailsFast(t *testing.T) {
	fc := clienttest.New(3)
	reqs := refuseAll(fc, wire.ClusterAuthorizationFailed, wire.TypeCreateACLs, wire.TypeDeleteACLs, wire.TypeDescribeACLs)
	c := mustFakeClient(t, fc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(what string, err error) {
		t.Helper()
		wantFailedFast(t, ctx, what, err, wire.ClusterAuthorizationFailed)
	}
	_, err := c.Admin().CreateACLs(ctx, []wire.ACLBinding{topicACL("User:a", wire.OpRead, wire.PermissionAllow, "t")})
	check("create", err)
	_, err = c.Admin().DeleteACLs(ctx, wire.ACLFilter{})
	check("delete", err)
	_, err = c.Admin().DescribeACLs(ctx, wire.ACLFilter{})
	check("describe", err)
	if n := reqs.Load(); n != 3 {
		t.Fatalf("%d requests, want one per call (describe too: every node gives the same refusal)", n)
	}
}

// A node whose build has no handler for the ACL requests refuses them
// unread (quic.ErrUnknownType): the call fails at once saying so, instead
// of retrying until its context ends.
func TestAdminACLsUnknownRequestFailsFast(t *testing.T) {
	fc := clienttest.New(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := newWithCaller(Config{Bootstrap: fc.Addrs(), Logger: testLogger(t)}, unknownTypes{fc, []quic.FrameType{wire.TypeCreateACLs, wire.TypeDeleteACLs, wire.TypeDescribeACLs}})
	defer c.Close(context.Background())
	_, err := c.Admin().CreateACLs(ctx, []wire.ACLBinding{topicACL("User:a", wire.OpRead, wire.PermissionAllow, "t")})
	wantUnknownType(t, ctx, "create", err)
}
