package acl

import (
	"net/netip"
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
		if got := s.Allows(c.principal, netip.Addr{}, c.op, c.rt, c.name); got != c.want {
			t.Errorf("Allows(%s, %s, %s %s) = %v, want %v", c.principal, c.op, c.rt, c.name, got, c.want)
		}
	}
	var empty *Set
	if empty.Allows("User:ops", netip.Addr{}, wire.OpRead, topic, "x") || NewSet(nil).Allows("User:ops", netip.Addr{}, wire.OpRead, topic, "x") {
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
		if got := s.AllowsAny(c.principal, netip.Addr{}, wire.OpWrite, wire.ResourceTopic); got != c.want {
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

// A binding with a host applies to callers from that address or network
// (IPv4 also when it arrives mapped in IPv6); an allow with a host never
// applies to a caller whose address is unknown, a deny with a host does.
func TestHosts(t *testing.T) {
	b := func(perm, host string) wire.ACLBinding {
		return wire.ACLBinding{Principal: "User:checkout", ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral,
			Name: "payments", Operation: wire.OpWrite, Permission: perm, Host: host}
	}
	s := NewSet([]wire.ACLBinding{
		b(wire.PermissionAllow, "10.1.0.0/16"),
		b(wire.PermissionAllow, "192.168.7.9"),
		b(wire.PermissionDeny, "10.1.99.0/24"),
		b(wire.PermissionAllow, "2001:db8::/32"),
	})
	for _, c := range []struct {
		addr string
		want bool
	}{
		{"10.1.2.3", true},
		{"::ffff:10.1.2.3", true},
		{"10.2.0.1", false},
		{"192.168.7.9", true},
		{"192.168.7.10", false},
		{"10.1.99.5", false}, // the deny's network
		{"2001:db8::1", true},
		{"2001:db9::1", false},
		{"", false}, // unknown: no allow with a host applies
	} {
		var a netip.Addr
		if c.addr != "" {
			a = netip.MustParseAddr(c.addr)
		}
		if got := s.Allows("User:checkout", a, wire.OpWrite, wire.ResourceTopic, "payments"); got != c.want {
			t.Errorf("write from %q: %v, want %v", c.addr, got, c.want)
		}
		// Describe is implied by the allow; the deny is of write alone.
		if got, want := s.Allows("User:checkout", a, wire.OpDescribe, wire.ResourceTopic, "payments"), c.want || c.addr == "10.1.99.5"; got != want {
			t.Errorf("describe (implied by write) from %q: %v, want %v", c.addr, got, want)
		}
	}
	// An allow for every host with a deny from one network: everyone but
	// that network, and no one whose address is unknown.
	s = NewSet([]wire.ACLBinding{b(wire.PermissionAllow, ""), b(wire.PermissionDeny, "10.9.0.0/16")})
	for addr, want := range map[string]bool{"10.9.1.1": false, "10.8.1.1": true, "": false} {
		var a netip.Addr
		if addr != "" {
			a = netip.MustParseAddr(addr)
		}
		if got := s.Allows("User:checkout", a, wire.OpWrite, wire.ResourceTopic, "payments"); got != want {
			t.Errorf("allow all, deny 10.9/16: write from %q: %v, want %v", addr, got, want)
		}
		if got := s.AllowsAny("User:checkout", a, wire.OpWrite, wire.ResourceTopic); got != true {
			t.Errorf("AllowsAny from %q: %v (a deny of one topic does not cover every topic)", addr, got)
		}
	}
}
