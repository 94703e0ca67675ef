package acl

import (
	"testing"

	"paymentlog/wire"
)

func bind(perm, principal, op, rt, pt, name string) wire.ACLBinding {
	return wire.ACLBinding{Principal: principal, ResourceType: rt, PatternType: pt, Name: name, Operation: op, Permission: perm}
}

func TestAllows(t *testing.T) {
	const (
		allow, deny = wire.PermissionAllow, wire.PermissionDeny
		topic, grp  = wire.ResourceTopic, wire.ResourceGroup
		lit, pre    = wire.PatternLiteral, wire.PatternPrefixed
	)
	s := NewSet([]wire.ACLBinding{
		bind(allow, "User:billing", wire.OpRead, topic, lit, "payments"),
		bind(allow, "User:billing", wire.OpRead, grp, pre, "billing-"),
		bind(allow, "User:checkout", wire.OpWrite, topic, pre, "payments"),
		bind(deny, "User:checkout", wire.OpWrite, topic, lit, "payments-eu"),
		bind(allow, "User:*", wire.OpDescribe, topic, lit, "public"),
		bind(allow, "User:ops", wire.OpAll, topic, lit, "*"),
		bind(deny, "User:ops", wire.OpDelete, topic, pre, "payments"),
		bind(allow, "User:audit", wire.OpRead, topic, lit, "*"),
		bind(deny, "User:*", wire.OpAll, topic, lit, "secret"),
		bind(allow, "User:billing", wire.OpRead, topic, lit, "payments"), // duplicate: dropped
	})
	if s.Len() != 9 {
		t.Fatalf("Len = %d, want 9 (the duplicate dropped)", s.Len())
	}
	cases := []struct {
		principal, op, rt, name string
		want                    bool
	}{
		{"User:billing", wire.OpRead, topic, "payments", true},
		{"User:billing", wire.OpDescribe, topic, "payments", true}, // read implies describe
		{"User:billing", wire.OpWrite, topic, "payments", false},
		{"User:billing", wire.OpRead, topic, "payments-eu", false}, // literal is not a prefix
		{"User:billing", wire.OpRead, grp, "billing-eu", true},
		{"User:billing", wire.OpRead, grp, "billing", false},           // the prefix is "billing-"
		{"User:billing", wire.OpRead, topic, "billing-eu", false},      // a group binding, not a topic one
		{"User:checkout", wire.OpWrite, topic, "payments-us", true},    // prefixed
		{"User:checkout", wire.OpWrite, topic, "payments-eu", false},   // deny wins
		{"User:checkout", wire.OpDescribe, topic, "payments-eu", true}, // a write deny does not deny describe
		{"User:checkout", wire.OpRead, topic, "payments-us", false},
		{"User:anyone", wire.OpDescribe, topic, "public", true}, // wildcard principal
		{"User:anyone", wire.OpRead, topic, "public", false},    // describe does not imply read
		{"User:ops", wire.OpAlter, topic, "orders", true},       // all on "*"
		{"User:ops", wire.OpDelete, topic, "orders", true},
		{"User:ops", wire.OpDelete, topic, "payments-eu", false}, // prefixed deny
		{"User:audit", wire.OpRead, topic, "secret", false},      // the wildcard principal's deny all
		{"User:audit", wire.OpRead, topic, "orders", true},
		{"User:nobody", wire.OpDescribe, topic, "orders", false}, // no binding: refused
	}
	for _, c := range cases {
		if got := s.Allows(c.principal, c.op, c.rt, c.name); got != c.want {
			t.Errorf("Allows(%s, %s, %s %s) = %v, want %v", c.principal, c.op, c.rt, c.name, got, c.want)
		}
	}
	var empty *Set
	if empty.Allows("User:ops", wire.OpRead, topic, "x") || NewSet(nil).Allows("User:ops", wire.OpRead, topic, "x") {
		t.Error("an empty set allows")
	}
}

func TestAllowsAny(t *testing.T) {
	s := NewSet([]wire.ACLBinding{
		bind(wire.PermissionAllow, "User:checkout", wire.OpWrite, wire.ResourceTopic, wire.PatternPrefixed, "payments"),
		bind(wire.PermissionAllow, "User:billing", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "payments"),
		bind(wire.PermissionAllow, "User:mallory", wire.OpWrite, wire.ResourceTopic, wire.PatternLiteral, "x"),
		bind(wire.PermissionDeny, "User:mallory", wire.OpAll, wire.ResourceTopic, wire.PatternLiteral, "*"),
	})
	for _, c := range []struct {
		principal string
		want      bool
	}{{"User:checkout", true}, {"User:billing", false}, {"User:mallory", false}, {"User:nobody", false}} {
		if got := s.AllowsAny(c.principal, wire.OpWrite, wire.ResourceTopic); got != c.want {
			t.Errorf("AllowsAny(%s, write, topic) = %v, want %v", c.principal, got, c.want)
		}
	}
}

func TestSelectAndHas(t *testing.T) {
	a := bind(wire.PermissionAllow, "User:a", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "t")
	b := bind(wire.PermissionAllow, "User:b", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "t")
	c := bind(wire.PermissionDeny, "User:a", wire.OpAll, wire.ResourceGroup, wire.PatternLiteral, "g")
	s := NewSet([]wire.ACLBinding{c, b, a})
	if got := s.Select(wire.ACLFilter{Principal: "User:a"}); len(got) != 2 || got[0] != c || got[1] != a {
		t.Errorf("Select(User:a) = %v, want [%v %v] (sorted: group before topic)", got, c, a)
	}
	if got := s.Select(wire.ACLFilter{}); len(got) != 3 {
		t.Errorf("the empty filter selects %d, want 3", len(got))
	}
	if !s.Has(b) || s.Has(bind(wire.PermissionDeny, "User:b", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "t")) {
		t.Error("Has is wrong")
	}
}

func TestCheckACLBinding(t *testing.T) {
	ok := bind(wire.PermissionAllow, "User:billing", wire.OpRead, wire.ResourceTopic, wire.PatternLiteral, "payments")
	if why := wire.CheckACLBinding(ok); why != "" {
		t.Fatalf("valid binding refused: %s", why)
	}
	bad := []func(*wire.ACLBinding){
		func(b *wire.ACLBinding) { b.Principal = "billing" },
		func(b *wire.ACLBinding) { b.Principal = "User:" },
		func(b *wire.ACLBinding) { b.Principal = "User:a\x00" },
		func(b *wire.ACLBinding) { b.ResourceType = "topics" },
		func(b *wire.ACLBinding) { b.Operation = "create"; b.ResourceType = wire.ResourceGroup; b.Name = "g" },
		func(b *wire.ACLBinding) { b.Operation = "ALL" },
		func(b *wire.ACLBinding) { b.Permission = "permit" },
		func(b *wire.ACLBinding) { b.PatternType = "match" },
		func(b *wire.ACLBinding) { b.Name = "" },
		func(b *wire.ACLBinding) { b.Name = "a b" },
		func(b *wire.ACLBinding) { b.Name = "*"; b.PatternType = wire.PatternPrefixed },
		func(b *wire.ACLBinding) { b.ResourceType = wire.ResourceCluster; b.Operation = wire.OpAlter },
		func(b *wire.ACLBinding) {
			b.ResourceType, b.Operation, b.PatternType, b.Name = wire.ResourceCluster, wire.OpAlter, wire.PatternPrefixed, wire.ClusterResourceName
		},
	}
	for i, mut := range bad {
		b := ok
		mut(&b)
		if why := wire.CheckACLBinding(b); why == "" {
			t.Errorf("case %d: %v accepted", i, b)
		}
	}
	cl := bind(wire.PermissionAllow, "User:*", wire.OpAlter, wire.ResourceCluster, wire.PatternLiteral, wire.ClusterResourceName)
	if why := wire.CheckACLBinding(cl); why != "" {
		t.Errorf("cluster binding refused: %s", why)
	}
}
