// Package acl decides whether a principal may perform an operation on a
// resource, from the cluster's ACL bindings (wire/acls.go). It is pure: the
// bindings come from the metadata image, the principal from the client's
// certificate, and node code decides who is a super user and whether
// bindings are enforced at all.
//
// The rules are Kafka's (AclAuthorizer):
//   - a binding matches a resource when its resource type is the
//     resource's and its pattern covers the name (literal: the same name,
//     or "*"; prefixed: a prefix of the name), its principal is the
//     caller's or "User:*", and its host (if it has one) is the address
//     the caller connects from or a network holding it; a deny binding
//     with a host also matches a caller whose address is unknown;
//   - a matching deny binding for the operation, or for all, refuses;
//   - otherwise a matching allow binding for the operation, or for all,
//     allows; describe is also allowed by read, write, delete and alter;
//   - otherwise the request is refused: without a binding nothing is
//     allowed.
package acl

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"

	"paymentlog/wire"
)

// Set is an immutable set of bindings, indexed by principal. The zero
// value and nil hold none.
type Set struct {
	all         []wire.ACLBinding  // sorted (Less), no duplicates
	byPrincipal map[string][]entry // principal → its bindings
}

// entry is a binding and its host parsed.
type entry struct {
	wire.ACLBinding
	host netip.Prefix // valid only when Host is set
}

// fromHost reports whether a caller at addr (the zero Addr: unknown) is one
// e applies to.
func (e *entry) fromHost(addr netip.Addr) bool {
	switch {
	case e.Host == "":
		return true
	case !addr.IsValid():
		return e.Permission == wire.PermissionDeny // fail closed
	}
	return e.host.Contains(addr.Unmap())
}

// parseHost parses a valid binding's host ("" gives the zero Prefix).
func parseHost(h string) netip.Prefix {
	if h == "" {
		return netip.Prefix{}
	}
	if p, err := netip.ParsePrefix(h); err == nil {
		return p
	}
	a, _ := netip.ParseAddr(h)
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen())
}

// NewSet indexes bindings (already valid), dropping duplicates.
func NewSet(bindings []wire.ACLBinding) *Set {
	all := slices.Clone(bindings)
	slices.SortFunc(all, Compare)
	all = slices.Compact(all)
	s := &Set{all: all, byPrincipal: map[string][]entry{}}
	for _, b := range all {
		s.byPrincipal[b.Principal] = append(s.byPrincipal[b.Principal], entry{b, parseHost(b.Host)})
	}
	return s
}

// Compare orders bindings by resource type, name, pattern type, principal,
// operation, permission and host.
func Compare(a, b wire.ACLBinding) int {
	return cmp.Or(cmp.Compare(a.ResourceType, b.ResourceType), cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.PatternType, b.PatternType), cmp.Compare(a.Principal, b.Principal),
		cmp.Compare(a.Operation, b.Operation), cmp.Compare(a.Permission, b.Permission), cmp.Compare(a.Host, b.Host))
}

// Len is the number of bindings.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.all)
}

// Bindings returns the bindings, sorted (shared: do not modify).
func (s *Set) Bindings() []wire.ACLBinding {
	if s == nil {
		return nil
	}
	return s.all
}

// Has reports whether b is in the set.
func (s *Set) Has(b wire.ACLBinding) bool {
	if s == nil {
		return false
	}
	_, ok := slices.BinarySearchFunc(s.all, b, Compare)
	return ok
}

// Select returns the bindings f selects, sorted.
func (s *Set) Select(f wire.ACLFilter) []wire.ACLBinding {
	var out []wire.ACLBinding
	for _, b := range s.Bindings() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// implies lists, per operation asked for, the operations whose allow
// bindings grant it besides itself and all.
var implies = map[string][]string{
	wire.OpDescribe: {wire.OpRead, wire.OpWrite, wire.OpDelete, wire.OpAlter},
}

// Allows reports whether principal, connecting from addr (the zero Addr:
// unknown), may perform op on the resource of type resourceType named name.
func (s *Set) Allows(principal string, addr netip.Addr, op, resourceType, name string) bool {
	if s == nil {
		return false
	}
	allowed := false
	for _, p := range [2]string{principal, wire.WildcardPrincipal} {
		for i := range s.byPrincipal[p] {
			b := &s.byPrincipal[p][i]
			if b.ResourceType != resourceType || !covers(b.ACLBinding, name) || !b.fromHost(addr) {
				continue
			}
			switch {
			case b.Permission == wire.PermissionDeny && (b.Operation == op || b.Operation == wire.OpAll):
				return false
			case b.Permission == wire.PermissionAllow && grants(b.Operation, op):
				allowed = true
			}
		}
		if p == wire.WildcardPrincipal {
			break // the principal was the wildcard itself
		}
	}
	return allowed
}

// AllowsAny reports whether principal may perform op on some resource of
// the type (Kafka's authorizeByResourceType, used for the idempotent
// producer's InitProducerID: write on any topic): an allow binding for it
// exists, and no deny binding for it covers every resource ("*" or the
// empty prefix).
func (s *Set) AllowsAny(principal string, addr netip.Addr, op, resourceType string) bool {
	if s == nil {
		return false
	}
	allowed := false
	for _, p := range [2]string{principal, wire.WildcardPrincipal} {
		for i := range s.byPrincipal[p] {
			b := &s.byPrincipal[p][i]
			if b.ResourceType != resourceType || !b.fromHost(addr) {
				continue
			}
			switch {
			case b.Permission == wire.PermissionDeny && (b.Operation == op || b.Operation == wire.OpAll) &&
				b.PatternType == wire.PatternLiteral && b.Name == wire.WildcardResource:
				return false
			case b.Permission == wire.PermissionAllow && grants(b.Operation, op):
				allowed = true
			}
		}
		if p == wire.WildcardPrincipal {
			break
		}
	}
	return allowed
}

// covers reports whether b's pattern names the resource name.
func covers(b wire.ACLBinding, name string) bool {
	if b.PatternType == wire.PatternPrefixed {
		return strings.HasPrefix(name, b.Name)
	}
	return b.Name == name || b.Name == wire.WildcardResource
}

// grants reports whether an allow binding for bop grants op.
func grants(bop, op string) bool {
	return bop == op || bop == wire.OpAll || slices.Contains(implies[op], bop)
}
