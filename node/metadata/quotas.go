package metadata

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"paymentlog/wire"
)

// Client quotas (wire/quotas.go) live in the image: the active controller
// decides a change into a ClientQuotasChanged record, so every node meters
// the same rates, without a restart, and they are in every snapshot.

// ClientQuotasChanged (record type 18, metadata version 6) changes the
// quotas of entities (a principal, or "" for the default): each entry's Set
// keys are set, then its Delete keys removed; an entity left without a key
// is removed. It applies when it holds 1 to wire.MaxACLsPerRequest entries,
// each valid (wire.CheckQuotaEntry), no entity named twice, and the image
// then holds at most wire.MaxQuotaEntities entities.
type ClientQuotasChanged struct {
	Entries []wire.QuotaEntry `msgpack:"entries"`
}

// TypeClientQuotasChanged is ClientQuotasChanged's record type. Part of the
// format: never renumber.
const TypeClientQuotasChanged RecordType = 18

func (ClientQuotasChanged) Type() RecordType { return TypeClientQuotasChanged }
func (ClientQuotasChanged) Version() uint8   { return 1 }

func init() { typeNames[TypeClientQuotasChanged] = "ClientQuotasChanged" }

// quotasVersion is the metadata version of ClientQuotasChanged.
const quotasVersion = 6

// sortedRates is a map of quota values that encodes its keys sorted:
// msgpack's SetSortMapKeys sorts only maps of strings, bools and
// interfaces, so a map[string]int64 would encode in Go's random map order
// (and an image's hash would differ between nodes holding the same image).
// It decodes as any map.
type sortedRates map[string]int64

// EncodeMsgpack encodes m as a map, keys sorted.
func (m sortedRates) EncodeMsgpack(enc *msgpack.Encoder) error {
	if m == nil {
		return enc.EncodeNil()
	}
	if err := enc.EncodeMapLen(len(m)); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := enc.EncodeString(k); err != nil {
			return err
		}
		if err := enc.EncodeInt(m[k]); err != nil {
			return err
		}
	}
	return nil
}

// quotaEntryEncoding is wire.QuotaEntry as ClientQuotasChanged encodes it:
// the same tags, Set's keys sorted.
type quotaEntryEncoding struct {
	Principal string      `msgpack:"pr"`
	Set       sortedRates `msgpack:"set,omitempty"`
	Delete    []string    `msgpack:"del,omitempty"`
}

// EncodeMsgpack encodes r as its struct would be, with each entry's Set
// keys sorted (sortedRates), so that a record's bytes are canonical like
// every other record's. It decodes as the struct.
func (r ClientQuotasChanged) EncodeMsgpack(enc *msgpack.Encoder) error {
	var es []quotaEntryEncoding
	if r.Entries != nil {
		es = make([]quotaEntryEncoding, len(r.Entries))
	}
	for i, e := range r.Entries {
		es[i] = quotaEntryEncoding{Principal: e.Principal, Set: e.Set, Delete: e.Delete}
	}
	return enc.Encode(struct {
		Entries []quotaEntryEncoding `msgpack:"entries"`
	}{es})
}

// ClientQuota returns principal's quota for key in bytes per second: its
// own value, else the default's (principal ""), else ok is false. Called on
// every produce and fetch: two map lookups, no allocation (it fits
// quota.Limit as a method value).
func (m *Image) ClientQuota(principal, key string) (rate int64, ok bool) {
	if rate, ok = m.quotas[principal][key]; ok {
		return rate, true
	}
	rate, ok = m.quotas[""][key]
	return rate, ok
}

// HasClientQuotas reports whether any entity has a quota (so that a node
// with none meters nothing, not even a principal's name).
func (m *Image) HasClientQuotas() bool { return len(m.quotas) > 0 }

// ClientQuotas returns every entity with a quota, the default ("") first,
// then sorted by principal; Values are copies (nil when no entity has one).
func (m *Image) ClientQuotas() []wire.ClientQuota {
	if len(m.quotas) == 0 {
		return nil
	}
	out := make([]wire.ClientQuota, 0, len(m.quotas))
	for _, p := range slices.Sorted(maps.Keys(m.quotas)) { // "" sorts first
		out = append(out, wire.ClientQuota{Principal: p, Values: maps.Clone(m.quotas[p])})
	}
	return out
}

// quotaEntity names an entity in messages: "the default", or the principal
// quoted (it may be invalid: unprintable, or long).
func quotaEntity(principal string) string {
	if principal == "" {
		return wire.QuotaEntityName("")
	}
	return fmt.Sprintf("%.256q", principal)
}

// quotaEntityTwice says which entity es names twice ("" when none).
func quotaEntityTwice(es []wire.QuotaEntry) string {
	seen := make(map[string]bool, len(es))
	for _, e := range es {
		if seen[e.Principal] {
			return fmt.Sprintf("quota of %s named twice", quotaEntity(e.Principal))
		}
		seen[e.Principal] = true
	}
	return ""
}

// applyClientQuotasChanged applies r; it returns a non-empty reason when
// rejected.
func (b *builder) applyClientQuotasChanged(r ClientQuotasChanged) string {
	if len(r.Entries) == 0 || len(r.Entries) > wire.MaxACLsPerRequest {
		return fmt.Sprintf("%d quota entries (want 1 to %d)", len(r.Entries), wire.MaxACLsPerRequest)
	}
	for i, e := range r.Entries {
		if why := wire.CheckQuotaEntry(e); why != "" {
			return fmt.Sprintf("quota entry %d for %s: %s", i, quotaEntity(e.Principal), why)
		}
	}
	if why := quotaEntityTwice(r.Entries); why != "" {
		return why
	}
	// Copy-on-write: the outer map and each entity's values may be shared
	// with the base image (or an earlier record of this entry, which is
	// cheap enough to copy again).
	q := maps.Clone(b.next.quotas)
	if q == nil {
		q = map[string]map[string]int64{}
	}
	for _, e := range r.Entries {
		vals := maps.Clone(q[e.Principal])
		if vals == nil {
			vals = make(map[string]int64, len(e.Set))
		}
		maps.Copy(vals, e.Set)
		for _, k := range e.Delete {
			delete(vals, k)
		}
		if len(vals) == 0 {
			delete(q, e.Principal)
		} else {
			q[e.Principal] = vals
		}
	}
	if len(q) > wire.MaxQuotaEntities {
		return fmt.Sprintf("%d quota entities, more than %d", len(q), wire.MaxQuotaEntities)
	}
	if len(q) == 0 {
		q = nil // as an image that never had quotas, and its snapshot, hold
	}
	b.next.quotas = q
	b.quotas = true
	b.useVersion(quotasVersion)
	return ""
}

// quotasEqual reports whether two images' quotas are the same.
func quotasEqual(a, b map[string]map[string]int64) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]int64) bool { return maps.Equal(x, y) })
}

// formatClientQuotasChanged renders r on one line: per entry, the entity
// ("default" for ""), the keys set (sorted) and "-key" for those deleted,
// entries separated by "; ".
func formatClientQuotasChanged(r ClientQuotasChanged) string {
	var sb strings.Builder
	sb.WriteString("ClientQuotasChanged")
	for i, e := range r.Entries {
		if i == 0 {
			sb.WriteByte(' ')
		} else {
			sb.WriteString("; ")
		}
		if e.Principal == "" {
			sb.WriteString("default")
		} else {
			sb.WriteString(e.Principal)
		}
		for _, k := range slices.Sorted(maps.Keys(e.Set)) {
			fmt.Fprintf(&sb, " %s=%d", k, e.Set[k])
		}
		for _, k := range e.Delete {
			sb.WriteString(" -" + k)
		}
	}
	return sb.String()
}

// snapQuota is one entity's quotas in a snapshot: wire.ClientQuota's tags,
// Values' keys sorted.
type snapQuota struct {
	Principal string      `msgpack:"pr"`
	Values    sortedRates `msgpack:"values"`
}

// snapQuotas encodes the image's quotas (nil when none).
func (m *Image) snapQuotas() []snapQuota {
	var out []snapQuota
	for _, q := range m.ClientQuotas() {
		out = append(out, snapQuota{Principal: q.Principal, Values: q.Values})
	}
	return out
}

// loadSnapQuotas decodes a snapshot's quotas into m, checking every
// invariant: at most wire.MaxQuotaEntities, sorted by principal ("" first)
// and unique, each principal valid, each entity with at least one value,
// keys known and values at least wire.MinQuotaByteRate, and only in an
// image of metadata version 6 or later (which a build that does not apply
// quota records refuses).
func (m *Image) loadSnapQuotas(qs []snapQuota) error {
	if len(qs) == 0 {
		return nil
	}
	if len(qs) > wire.MaxQuotaEntities {
		return fmt.Errorf("%d quota entities", len(qs))
	}
	if m.metadataVersion < quotasVersion {
		return fmt.Errorf("client quotas in an image of metadata version %d", m.metadataVersion)
	}
	out := make(map[string]map[string]int64, len(qs))
	for i, q := range qs {
		if i > 0 && q.Principal <= qs[i-1].Principal {
			return fmt.Errorf("quota entities not sorted or repeated at %s", quotaEntity(q.Principal))
		}
		if len(q.Values) == 0 {
			return fmt.Errorf("quota of %s: no value", quotaEntity(q.Principal))
		}
		if why := wire.CheckQuotaEntry(wire.QuotaEntry{Principal: q.Principal, Set: q.Values}); why != "" {
			return fmt.Errorf("quota entity %d (%s): %s", i, quotaEntity(q.Principal), why)
		}
		out[q.Principal] = q.Values // decoded for this image alone
	}
	m.quotas = out
	return nil
}
