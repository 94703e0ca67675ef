package metadata

import (
	"slices"

	"paymentlog/node/acl"
	"paymentlog/wire"
)

// The active controller's decisions on ACL bindings (acls.go).

// DecideCreateACLs returns the ACLsCreated that adds the bindings the image
// does not hold yet, and how many that is. Refused with InvalidRequest: no
// binding, more than wire.MaxACLsPerRequest, an invalid one (named, with
// why), or more than wire.MaxACLs in the cluster after it; with
// UnsupportedVersion while a registered broker's build does not apply
// version 5. Bindings already held, and repeats within the request, are
// dropped: when nothing is new there are no records (a retry of a
// committed request succeeds with created 0).
func DecideCreateACLs(img *Image, bindings []wire.ACLBinding) (recs []Record, created int, err error) {
	switch {
	case len(bindings) == 0:
		return nil, 0, werr(wire.InvalidRequest, "no ACL binding to create")
	case len(bindings) > wire.MaxACLsPerRequest:
		return nil, 0, werr(wire.InvalidRequest, "%d ACL bindings in one request, at most %d", len(bindings), wire.MaxACLsPerRequest)
	}
	for i, b := range bindings {
		if why := wire.CheckACLBinding(b); why != "" {
			return nil, 0, werr(wire.InvalidRequest, "ACL binding %d (%.256q): %s", i, b.String(), why)
		}
	}
	cur := img.ACLs()
	var fresh []wire.ACLBinding
	for _, b := range slices.SortedFunc(slices.Values(bindings), acl.Compare) {
		if !cur.Has(b) && (len(fresh) == 0 || fresh[len(fresh)-1] != b) {
			fresh = append(fresh, b)
		}
	}
	if len(fresh) == 0 {
		return nil, 0, nil
	}
	if n := cur.Len() + len(fresh); n > wire.MaxACLs {
		return nil, 0, werr(wire.InvalidRequest, "the cluster would hold %d ACL bindings, more than %d: delete bindings no longer used",
			n, wire.MaxACLs)
	}
	if err := requireVersion(img, aclsVersionOf(fresh), "creating ACLs"+hostsNote(fresh)); err != nil {
		return nil, 0, err
	}
	return []Record{ACLsCreated{ACLs: fresh}}, len(fresh), nil
}

// DecideDeleteACLs returns the ACLsDeleted that removes every binding one
// of filters selects, and those bindings (sorted, each once). Refused with
// InvalidRequest: no filter, more than wire.MaxACLsPerRequest, or one
// failing wire.CheckACLFilter; with UnsupportedVersion while a registered
// broker's build does not apply version 5. Nothing selected is no records,
// not an error.
func DecideDeleteACLs(img *Image, filters []wire.ACLFilter) (recs []Record, deleted []wire.ACLBinding, err error) {
	switch {
	case len(filters) == 0:
		return nil, nil, werr(wire.InvalidRequest, "no ACL filter (the empty filter selects every binding)")
	case len(filters) > wire.MaxACLsPerRequest:
		return nil, nil, werr(wire.InvalidRequest, "%d ACL filters in one request, at most %d", len(filters), wire.MaxACLsPerRequest)
	}
	for i, f := range filters {
		if why := wire.CheckACLFilter(f); why != "" {
			return nil, nil, werr(wire.InvalidRequest, "ACL filter %d: %s", i, why)
		}
	}
	// The image's bindings are sorted and unique, so their selection is.
	for _, b := range img.ACLs().Bindings() {
		if slices.ContainsFunc(filters, func(f wire.ACLFilter) bool { return f.Matches(b) }) {
			deleted = append(deleted, b)
		}
	}
	if len(deleted) == 0 {
		return nil, nil, nil
	}
	if err := requireVersion(img, aclsVersionOf(deleted), "deleting ACLs"+hostsNote(deleted)); err != nil {
		return nil, nil, err
	}
	return []Record{ACLsDeleted{ACLs: deleted}}, slices.Clone(deleted), nil
}

// hostsNote names why records of bs need the later version, if they do.
func hostsNote(bs []wire.ACLBinding) string {
	if aclsVersionOf(bs) == aclHostsVersion {
		return " with a host"
	}
	return ""
}
