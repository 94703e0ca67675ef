package metadata

import (
	"fmt"
	"slices"
	"strings"

	"paymentlog/node/acl"
	"paymentlog/wire"
)

// ACL bindings (wire/acls.go) live in the image: the active controller
// decides a change into ACLsCreated or ACLsDeleted records, so every node
// applies the same bindings, without a restart, and they are in every
// snapshot.

// ACLsCreated (record type 16, metadata version 5) adds bindings. It
// applies when it holds 1 to wire.MaxACLsPerRequest bindings, each valid
// (wire.CheckACLBinding), none already in the image nor named twice, and
// the image then holds at most wire.MaxACLs.
type ACLsCreated struct {
	ACLs []wire.ACLBinding `msgpack:"acls"`
}

// ACLsDeleted (record type 17, metadata version 5) removes bindings. It
// applies when it holds 1 to wire.MaxACLs bindings, each in the image and
// none named twice.
type ACLsDeleted struct {
	ACLs []wire.ACLBinding `msgpack:"acls"`
}

// Record types of the ACL records. Part of the format: never renumber.
const (
	TypeACLsCreated RecordType = 16
	TypeACLsDeleted RecordType = 17
)

func (ACLsCreated) Type() RecordType { return TypeACLsCreated }
func (ACLsCreated) Version() uint8   { return 1 }
func (ACLsDeleted) Type() RecordType { return TypeACLsDeleted }
func (ACLsDeleted) Version() uint8   { return 1 }

func init() {
	typeNames[TypeACLsCreated] = "ACLsCreated"
	typeNames[TypeACLsDeleted] = "ACLsDeleted"
}

// aclsVersion is the metadata version of the ACL records, aclHostsVersion
// that of ACL records holding a binding with a host.
const (
	aclsVersion     = 5
	aclHostsVersion = 8
)

// aclsVersionOf is the metadata version records holding bs need.
func aclsVersionOf(bs []wire.ACLBinding) int32 {
	if slices.ContainsFunc(bs, func(b wire.ACLBinding) bool { return b.Host != "" }) {
		return aclHostsVersion
	}
	return aclsVersion
}

// ACLs returns the ACL bindings (nil when none; a nil *acl.Set holds none).
func (m *Image) ACLs() *acl.Set { return m.acls }

// applyACLsCreated applies r; it returns a non-empty reason when rejected.
func (b *builder) applyACLsCreated(r ACLsCreated) string {
	if len(r.ACLs) == 0 || len(r.ACLs) > wire.MaxACLsPerRequest {
		return fmt.Sprintf("%d ACL bindings created (want 1 to %d)", len(r.ACLs), wire.MaxACLsPerRequest)
	}
	cur := b.next.acls
	if cur.Len()+len(r.ACLs) > wire.MaxACLs {
		return fmt.Sprintf("%d ACL bindings and %d more exceed %d", cur.Len(), len(r.ACLs), wire.MaxACLs)
	}
	for _, x := range r.ACLs {
		if why := wire.CheckACLBinding(x); why != "" {
			return why
		}
		if cur.Has(x) {
			return fmt.Sprintf("ACL binding %.256q exists", x.String())
		}
	}
	if why := namedTwice(r.ACLs); why != "" {
		return why
	}
	// Concat, not append: the current set's slice is shared with the base
	// image and may have room after its end.
	b.next.acls = acl.NewSet(slices.Concat(cur.Bindings(), r.ACLs))
	b.acls = true
	b.useVersion(aclsVersionOf(r.ACLs))
	return ""
}

// applyACLsDeleted applies r; it returns a non-empty reason when rejected.
func (b *builder) applyACLsDeleted(r ACLsDeleted) string {
	if len(r.ACLs) == 0 || len(r.ACLs) > wire.MaxACLs {
		return fmt.Sprintf("%d ACL bindings deleted (want 1 to %d)", len(r.ACLs), wire.MaxACLs)
	}
	cur := b.next.acls
	for _, x := range r.ACLs {
		if !cur.Has(x) {
			return fmt.Sprintf("no ACL binding %.256q", x.String())
		}
	}
	if why := namedTwice(r.ACLs); why != "" {
		return why
	}
	gone := slices.SortedFunc(slices.Values(r.ACLs), acl.Compare)
	left := make([]wire.ACLBinding, 0, cur.Len()-len(gone))
	for _, x := range cur.Bindings() {
		if _, found := slices.BinarySearchFunc(gone, x, acl.Compare); !found {
			left = append(left, x)
		}
	}
	b.next.acls = nil // as an image without bindings, and its snapshot, hold
	if len(left) > 0 {
		b.next.acls = acl.NewSet(left)
	}
	b.acls = true
	b.useVersion(aclsVersionOf(r.ACLs))
	return ""
}

// namedTwice says which binding bs names twice ("" when none).
func namedTwice(bs []wire.ACLBinding) string {
	sorted := slices.SortedFunc(slices.Values(bs), acl.Compare)
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return fmt.Sprintf("ACL binding %.256q named twice", sorted[i].String())
		}
	}
	return ""
}

// aclsEqual reports whether two sets hold the same bindings.
func aclsEqual(a, b *acl.Set) bool { return slices.Equal(a.Bindings(), b.Bindings()) }

// formatACLs renders an ACL record on one line: its name, then its
// bindings (wire.ACLBinding.String) separated by "; ".
func formatACLs(name string, bs []wire.ACLBinding) string {
	var sb strings.Builder
	sb.WriteString(name)
	for i, x := range bs {
		if i == 0 {
			sb.WriteByte(' ')
		} else {
			sb.WriteString("; ")
		}
		sb.WriteString(x.String())
	}
	return sb.String()
}

// loadSnapACLs decodes a snapshot's bindings into m, checking every
// invariant: at most wire.MaxACLs, each valid, sorted, none repeated, and
// only in an image of metadata version 5 or later (which a build that does
// not apply ACL records refuses).
func (m *Image) loadSnapACLs(bs []wire.ACLBinding) error {
	if len(bs) == 0 {
		return nil
	}
	if len(bs) > wire.MaxACLs {
		return fmt.Errorf("%d ACL bindings", len(bs))
	}
	if v := aclsVersionOf(bs); m.metadataVersion < v {
		return fmt.Errorf("ACL bindings (of metadata version %d) in an image of metadata version %d", v, m.metadataVersion)
	}
	for i, x := range bs {
		if why := wire.CheckACLBinding(x); why != "" {
			return fmt.Errorf("ACL binding %d: %s", i, why)
		}
		if i > 0 && acl.Compare(bs[i-1], x) >= 0 {
			return fmt.Errorf("ACL bindings not sorted or repeated at %.256q", x.String())
		}
	}
	m.acls = acl.NewSet(bs)
	return nil
}
