package metadata

import (
	"slices"
	"strings"

	"paymentlog/wire"
)

// The active controller's decisions on client quotas (quotas.go).

// DecideAlterClientQuotas returns the ClientQuotasChanged that carries out
// entries, without their parts that change nothing (setting a key to its
// current value, deleting one not set), entries sorted by principal (the
// default first). Refused with InvalidRequest: no entry, more than
// wire.MaxACLsPerRequest, an invalid one (naming the entity, and why), an
// entity named twice, or more than wire.MaxQuotaEntities entities in the
// cluster after it; with UnsupportedVersion while a registered broker's
// build does not apply version 6. A change that changes nothing is no
// records (a retry of a committed change succeeds).
func DecideAlterClientQuotas(img *Image, entries []wire.QuotaEntry) ([]Record, error) {
	switch {
	case len(entries) == 0:
		return nil, werr(wire.InvalidRequest, "no client quota to change")
	case len(entries) > wire.MaxACLsPerRequest:
		return nil, werr(wire.InvalidRequest, "%d quota entries in one request, at most %d", len(entries), wire.MaxACLsPerRequest)
	}
	for i, e := range entries {
		if why := wire.CheckQuotaEntry(e); why != "" {
			return nil, werr(wire.InvalidRequest, "quota entry %d for %s: %s", i, quotaEntity(e.Principal), why)
		}
	}
	if why := quotaEntityTwice(entries); why != "" {
		return nil, werr(wire.InvalidRequest, "%s", why)
	}
	var changes []wire.QuotaEntry
	entities := len(img.quotas)
	for _, e := range slices.SortedFunc(slices.Values(entries), func(x, y wire.QuotaEntry) int { return strings.Compare(x.Principal, y.Principal) }) {
		cur := img.quotas[e.Principal]
		c := wire.QuotaEntry{Principal: e.Principal}
		n := len(cur) // keys the entity holds after the change
		for k, v := range e.Set {
			old, ok := cur[k]
			if ok && old == v {
				continue
			}
			if c.Set == nil {
				c.Set = map[string]int64{}
			}
			c.Set[k] = v
			if !ok {
				n++
			}
		}
		for _, k := range e.Delete { // not also set, and not repeated (CheckQuotaEntry)
			if _, ok := cur[k]; ok {
				c.Delete = append(c.Delete, k)
				n--
			}
		}
		if c.Set == nil && c.Delete == nil {
			continue
		}
		switch {
		case len(cur) == 0 && n > 0:
			entities++
		case len(cur) > 0 && n == 0:
			entities--
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil, nil
	}
	if entities > wire.MaxQuotaEntities {
		return nil, werr(wire.InvalidRequest, "the cluster would hold quotas of %d entities, more than %d: delete quotas no longer used",
			entities, wire.MaxQuotaEntities)
	}
	if err := requireVersion(img, quotasVersion, "changing client quotas"); err != nil {
		return nil, err
	}
	return []Record{ClientQuotasChanged{Entries: changes}}, nil
}
