package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"paymentlog/wire"
)

const (
	produce = wire.QuotaProducerByteRate
	consume = wire.QuotaConsumerByteRate
	mib     = int64(1 << 20)
)

// setQuota is an entry setting key=rate pairs of principal.
func setQuota(principal string, kv ...any) wire.QuotaEntry {
	e := wire.QuotaEntry{Principal: principal, Set: map[string]int64{}}
	for i := 0; i < len(kv); i += 2 {
		e.Set[kv[i].(string)] = kv[i+1].(int64)
	}
	return e
}

// deleteQuota is an entry deleting keys of principal.
func deleteQuota(principal string, keys ...string) wire.QuotaEntry {
	return wire.QuotaEntry{Principal: principal, Delete: keys}
}

// alterQuotas decides and applies a change, returning the image after it.
func alterQuotas(t *testing.T, img *Image, es ...wire.QuotaEntry) *Image {
	t.Helper()
	recs, err := DecideAlterClientQuotas(img, es)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	return mustApply(t, img, recs)
}

// wantQuota checks img.ClientQuota(principal, key).
func wantQuota(t *testing.T, img *Image, principal, key string, rate int64, ok bool) {
	t.Helper()
	if got, gotOK := img.ClientQuota(principal, key); got != rate || gotOK != ok {
		t.Fatalf("ClientQuota(%q, %s) = %d, %t; want %d, %t", principal, key, got, gotOK, rate, ok)
	}
}

// Quotas are set and deleted copy-on-write; a principal without its own
// value for a key has the default's; the image, its delta, its snapshot
// and its hash carry them; the metadata version becomes 6; an entity left
// without a key is gone, and deleting the last one leaves an image like one
// that never had any.
func TestClientQuotasChanged(t *testing.T) {
	base := upImage(t, 3)
	if base.quotas != nil || base.ClientQuotas() != nil || base.Version() != 1 {
		t.Fatalf("a fresh image holds quotas %v at version %d", base.ClientQuotas(), base.Version())
	}
	wantQuota(t, base, "User:billing", produce, 0, false)

	recs, err := DecideAlterClientQuotas(base, []wire.QuotaEntry{
		setQuota("User:billing", produce, mib, consume, 2*mib), setQuota("", consume, mib/2)})
	if err != nil || len(recs) != 1 {
		t.Fatalf("decide: %v %v", recs, err)
	}
	want := "ClientQuotasChanged default consumer_byte_rate=524288; User:billing consumer_byte_rate=2097152 producer_byte_rate=1048576"
	if got := FormatRecord(recs[0]); got != want {
		t.Fatalf("format:\n got %s\nwant %s", got, want)
	}
	one, d, err := base.ApplyEntry(base.Offset()+1, recs)
	if err != nil || !d.ClientQuotasChanged || d.Empty() || d.ACLsChanged {
		t.Fatalf("apply: delta %+v, %v", d, err)
	}
	if one.Version() != 6 {
		t.Fatalf("version %d, want 6", one.Version())
	}
	wantQuota(t, one, "User:billing", produce, mib, true)
	wantQuota(t, one, "User:billing", consume, 2*mib, true)
	wantQuota(t, one, "User:audit", consume, mib/2, true) // the default's
	wantQuota(t, one, "User:audit", produce, 0, false)
	wantQuota(t, one, "", consume, mib/2, true)
	wantQS := []wire.ClientQuota{
		{Principal: "", Values: map[string]int64{consume: mib / 2}},
		{Principal: "User:billing", Values: map[string]int64{produce: mib, consume: 2 * mib}},
	}
	qs := one.ClientQuotas()
	if !reflect.DeepEqual(qs, wantQS) {
		t.Fatalf("quotas %v, want %v", qs, wantQS)
	}
	qs[1].Values[produce] = 1 // a copy
	wantQuota(t, one, "User:billing", produce, mib, true)

	// billing's consumer rate deleted (it has the default's), audit's own
	// producer rate set, the default's consumer rate changed.
	two := alterQuotas(t, one, deleteQuota("User:billing", consume), setQuota("User:audit", produce, 4*mib), setQuota("", consume, mib))
	wantQuota(t, two, "User:billing", consume, mib, true)
	wantQuota(t, two, "User:billing", produce, mib, true)
	wantQuota(t, two, "User:audit", produce, 4*mib, true)
	wantQuota(t, two, "User:other", produce, 0, false)
	// The image it was applied to is unchanged.
	wantQuota(t, one, "User:billing", consume, 2*mib, true)
	wantQuota(t, one, "User:audit", produce, 0, false)
	wantQuota(t, one, "", consume, mib/2, true)
	if !reflect.DeepEqual(one.ClientQuotas(), wantQS) {
		t.Fatalf("a change altered the image it was applied to: %v", one.ClientQuotas())
	}

	again, err := UnmarshalSnapshot(0, two.MarshalSnapshot())
	if err != nil || again.Hash() != two.Hash() || !reflect.DeepEqual(again, two) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	if !Diff(one, two).ClientQuotasChanged || Diff(two, again).ClientQuotasChanged || Diff(base, one).ACLsChanged {
		t.Fatal("Diff misreads the quota change")
	}
	if one.Hash() == two.Hash() {
		t.Fatal("the hash ignores quotas")
	}

	// billing's last key deleted (and its consumer rate, not set: no
	// change), the default's only key: both entities are gone.
	recs, err = DecideAlterClientQuotas(two, []wire.QuotaEntry{deleteQuota("User:billing", produce, consume), deleteQuota("", consume)})
	wantRecs := []Record{ClientQuotasChanged{Entries: []wire.QuotaEntry{deleteQuota("", consume), deleteQuota("User:billing", produce)}}}
	if err != nil || !reflect.DeepEqual(recs, wantRecs) {
		t.Fatalf("delete: %v %v", recs, err)
	}
	three := mustApply(t, two, recs)
	if got := three.ClientQuotas(); !reflect.DeepEqual(got, []wire.ClientQuota{{Principal: "User:audit", Values: map[string]int64{produce: 4 * mib}}}) {
		t.Fatalf("after deleting billing's and the default's: %v", got)
	}
	wantQuota(t, three, "User:billing", produce, 0, false)
	wantQuota(t, three, "User:billing", consume, 0, false)

	empty, d, err := three.ApplyEntry(three.Offset()+1, []Record{ClientQuotasChanged{Entries: []wire.QuotaEntry{deleteQuota("User:audit", produce)}}})
	if err != nil || !d.ClientQuotasChanged {
		t.Fatalf("delete all: delta %+v, %v", d, err)
	}
	if empty.quotas != nil || empty.ClientQuotas() != nil {
		t.Fatalf("no quotas left, but the image holds %#v", empty.quotas)
	}
	// The same image at version 6 that never had quotas: equal hash, equal
	// snapshot (no "quotas" key), equal fields.
	never := *base
	never.metadataVersion = 6
	never.offset = empty.offset
	if empty.Hash() != never.Hash() || !bytes.Equal(empty.MarshalSnapshot(), never.MarshalSnapshot()) || !reflect.DeepEqual(*empty, never) {
		t.Fatal("an image whose quotas were all deleted differs from one that never had any")
	}
	if bytes.Contains(base.MarshalSnapshot(), []byte("quotas")) {
		t.Fatal("a snapshot without quotas names them")
	}
}

// Every rejection of ClientQuotasChanged, which leaves the image unchanged
// (and the delta empty); changes that cancel out, or set what is set, are
// no change.
func TestClientQuotaRecordsRejected(t *testing.T) {
	img := alterQuotas(t, upImage(t, 1), setQuota("User:billing", produce, mib))
	many := make([]wire.QuotaEntry, wire.MaxACLsPerRequest+1)
	for i := range many {
		many[i] = setQuota(fmt.Sprintf("User:u%d", i), produce, mib)
	}
	rec := func(es ...wire.QuotaEntry) Record { return ClientQuotasChanged{Entries: es} }
	for _, c := range []struct {
		name string
		rec  Record
		why  string
	}{
		{"none", rec(), "0 quota entries (want 1 to 1000)"},
		{"too many", rec(many...), "1001 quota entries"},
		{"bad principal", rec(setQuota("bob", produce, mib)), `quota entry 0 for "bob": principal "bob"`},
		{"wildcard", rec(setQuota("User:a", produce, mib), setQuota(wire.WildcardPrincipal, produce, mib)), "User:* is no principal for a quota"},
		{"nothing", rec(wire.QuotaEntry{Principal: "User:a"}), "nothing to set or delete"},
		{"unknown key", rec(setQuota("User:a", "request_percentage", int64(5000))), `quota key "request_percentage"`},
		{"low rate", rec(setQuota("", produce, int64(wire.MinQuotaByteRate-1))), "at least 1024"},
		{"set and deleted", rec(wire.QuotaEntry{Principal: "User:a", Set: map[string]int64{produce: mib}, Delete: []string{produce}}), "set and deleted"},
		{"deleted twice", rec(deleteQuota("User:billing", produce, produce)), "deleted twice"},
		{"entity twice", rec(setQuota("User:billing", consume, mib), setQuota("User:audit", produce, mib), deleteQuota("User:billing", produce)), `quota of "User:billing" named twice`},
		{"default twice", rec(setQuota("", consume, mib), deleteQuota("", produce)), "quota of the default named twice"},
	} {
		next, d, err := img.ApplyEntry(img.Offset()+1, []Record{c.rec})
		var rej *RejectError
		if !errors.As(err, &rej) || !strings.Contains(rej.Reason, c.why) {
			t.Fatalf("%s: %v, want a rejection saying %q", c.name, err, c.why)
		}
		if !reflect.DeepEqual(next.quotas, img.quotas) || d.ClientQuotasChanged || !d.Empty() {
			t.Fatalf("%s: a rejected record changed the image", c.name)
		}
	}

	// Set and deleted within one entry, or set to its value: no change,
	// and Diff agrees.
	for _, recs := range [][]Record{
		{rec(setQuota("User:audit", produce, mib)), rec(deleteQuota("User:audit", produce))},
		{rec(setQuota("User:billing", produce, mib), deleteQuota("User:nobody", consume))},
	} {
		next, d, err := img.ApplyEntry(img.Offset()+1, recs)
		if err != nil || d.ClientQuotasChanged || Diff(img, next).ClientQuotasChanged || !reflect.DeepEqual(next.quotas, img.quotas) {
			t.Fatalf("%v: delta %+v, %v", recs, d, err)
		}
	}
	// The last key deleted and another entity's set in one entry.
	next := mustApply(t, img, []Record{rec(deleteQuota("User:billing", produce)), rec(setQuota("", consume, mib))})
	if got := next.ClientQuotas(); !reflect.DeepEqual(got, []wire.ClientQuota{{Principal: "", Values: map[string]int64{consume: mib}}}) {
		t.Fatalf("quotas %v", got)
	}
}

// fullQuotas returns img holding quotas of n generated principals
// (User:u0.. producing 1 MiB/s).
func fullQuotas(img *Image, n int) *Image {
	full := *img
	full.quotas = make(map[string]map[string]int64, n)
	for i := range n {
		full.quotas[fmt.Sprintf("User:u%d", i)] = map[string]int64{produce: mib}
	}
	full.metadataVersion = 6
	return &full
}

// The cluster holds quotas of at most wire.MaxQuotaEntities entities: a
// record beyond is rejected, a request beyond refused; one up to the bound
// applies, and at the bound a change that adds one entity and removes
// another does.
func TestMaxQuotaEntities(t *testing.T) {
	almost := fullQuotas(upImage(t, 1), wire.MaxQuotaEntities-1)
	recs, err := DecideAlterClientQuotas(almost, []wire.QuotaEntry{setQuota("User:u0", produce, mib), setQuota("", consume, mib)})
	if err != nil || !reflect.DeepEqual(recs, []Record{ClientQuotasChanged{Entries: []wire.QuotaEntry{setQuota("", consume, mib)}}}) {
		t.Fatalf("the last entity: %v %v", recs, err)
	}
	full := mustApply(t, almost, recs)
	if len(full.quotas) != wire.MaxQuotaEntities {
		t.Fatalf("%d entities", len(full.quotas))
	}
	_, err = DecideAlterClientQuotas(full, []wire.QuotaEntry{setQuota("User:new", produce, mib)})
	wantCode(t, err, wire.InvalidRequest, "the cluster would hold quotas of 10001 entities, more than 10000")
	if _, _, err := full.ApplyEntry(full.Offset()+1, []Record{ClientQuotasChanged{Entries: []wire.QuotaEntry{setQuota("User:new", produce, mib)}}}); !errors.Is(err, ErrRejected) ||
		!strings.Contains(err.Error(), "10001 quota entities, more than 10000") {
		t.Fatalf("an entity beyond MaxQuotaEntities applied: %v", err)
	}
	// Full: a retry, a changed value, and one entity for another succeed.
	if recs, err := DecideAlterClientQuotas(full, []wire.QuotaEntry{setQuota("User:u7", produce, mib), deleteQuota("User:new", produce)}); err != nil || recs != nil {
		t.Fatalf("retry at the bound: %v %v", recs, err)
	}
	next := alterQuotas(t, full, setQuota("User:u7", produce, 2*mib, consume, mib))
	next = alterQuotas(t, next, setQuota("User:new", produce, mib), deleteQuota("User:u1", produce))
	if len(next.quotas) != wire.MaxQuotaEntities {
		t.Fatalf("%d entities", len(next.quotas))
	}
	wantQuota(t, next, "User:u1", consume, mib, true) // the default's
	wantQuota(t, next, "User:u1", produce, 0, false)
	wantQuota(t, next, "User:new", produce, mib, true)
}

// DecideAlterClientQuotas: refusals with their codes, naming the entity;
// no-op parts dropped; a retry that changes nothing; and a broker whose
// build does not apply version 6.
func TestDecideAlterClientQuotas(t *testing.T) {
	img := upImage(t, 3)
	for _, c := range []struct {
		name string
		es   []wire.QuotaEntry
		msg  string
	}{
		{"none", nil, "no client quota to change"},
		{"too many", make([]wire.QuotaEntry, wire.MaxACLsPerRequest+1), "1001 quota entries in one request, at most 1000"},
		{"low rate", []wire.QuotaEntry{setQuota("User:a", produce, mib), setQuota("User:bob", produce, int64(10))},
			`quota entry 1 for "User:bob": quota producer_byte_rate=10: want bytes per second, at least 1024`},
		{"bad principal", []wire.QuotaEntry{setQuota("bob", produce, mib)}, `quota entry 0 for "bob": principal "bob"`},
		{"wildcard", []wire.QuotaEntry{setQuota(wire.WildcardPrincipal, produce, mib)}, `quota entry 0 for "User:*": User:* is no principal for a quota`},
		{"default nothing", []wire.QuotaEntry{{}}, "quota entry 0 for the default: quota of the default: nothing to set or delete"},
		{"unknown key", []wire.QuotaEntry{deleteQuota("", "request_percentage")}, `quota entry 0 for the default: quota key "request_percentage"`},
		{"entity twice", []wire.QuotaEntry{setQuota("User:a", produce, mib), setQuota("", produce, mib), deleteQuota("User:a", consume)}, `quota of "User:a" named twice`},
		{"default twice", []wire.QuotaEntry{setQuota("", produce, mib), setQuota("", consume, mib)}, "quota of the default named twice"},
	} {
		recs, err := DecideAlterClientQuotas(img, c.es)
		if recs != nil {
			t.Fatalf("%s: records %v", c.name, recs)
		}
		wantCode(t, err, wire.InvalidRequest, c.msg)
	}

	next := alterQuotas(t, img, setQuota("User:a", produce, mib, consume, 2*mib))
	// Only what changes is recorded.
	recs, err := DecideAlterClientQuotas(next, []wire.QuotaEntry{setQuota("User:a", produce, mib, consume, 3*mib), deleteQuota("User:b", produce)})
	if err != nil || !reflect.DeepEqual(recs, []Record{ClientQuotasChanged{Entries: []wire.QuotaEntry{setQuota("User:a", consume, 3*mib)}}}) {
		t.Fatalf("one change of three: %v %v", recs, err)
	}
	recs, err = DecideAlterClientQuotas(next, []wire.QuotaEntry{deleteQuota("", consume), deleteQuota("User:a", produce)})
	if err != nil || !reflect.DeepEqual(recs, []Record{ClientQuotasChanged{Entries: []wire.QuotaEntry{deleteQuota("User:a", produce)}}}) {
		t.Fatalf("deleting one set key of two: %v %v", recs, err)
	}
	// A retry of the committed change.
	if recs, err := DecideAlterClientQuotas(next, []wire.QuotaEntry{setQuota("User:a", consume, 2*mib, produce, mib), deleteQuota("", produce)}); err != nil || recs != nil {
		t.Fatalf("retry: %v %v", recs, err)
	}

	// A broker whose build applies version 5 holds changes back (a retry
	// that changes nothing still succeeds).
	old := mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 5}})
	_, err = DecideAlterClientQuotas(old, []wire.QuotaEntry{setQuota("User:a", produce, mib)})
	wantCode(t, err, wire.UnsupportedVersion, "changing client quotas needs metadata version 6, which the builds of brokers [4 (version 5)]")
	oldWith := mustApply(t, next, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 5}})
	if recs, err := DecideAlterClientQuotas(oldWith, []wire.QuotaEntry{setQuota("User:a", produce, mib)}); err != nil || recs != nil {
		t.Fatalf("retry with an old broker: %v %v", recs, err)
	}
}

// A snapshot's quotas are checked like records: at most MaxQuotaEntities,
// sorted by principal with the default first, unique, valid principals,
// at least one value each, known keys, rates of at least MinQuotaByteRate,
// and only at metadata version 6 or later.
func TestSnapshotQuotasChecked(t *testing.T) {
	img := alterQuotas(t, upImage(t, 1), setQuota("", consume, mib), setQuota("User:a", produce, 2*mib), setQuota("User:b", produce, mib, consume, mib))
	for _, c := range []struct {
		name   string
		mutate func(s *snapshotV1)
		msg    string
	}{
		{"unsorted", func(s *snapshotV1) { s.Quotas[1], s.Quotas[2] = s.Quotas[2], s.Quotas[1] }, `not sorted or repeated at "User:a"`},
		{"default last", func(s *snapshotV1) { s.Quotas = append(s.Quotas[1:], s.Quotas[0]) }, "not sorted or repeated at the default"},
		{"repeated", func(s *snapshotV1) { s.Quotas[2].Principal = "User:a" }, "not sorted or repeated"},
		{"no value", func(s *snapshotV1) { s.Quotas[1].Values = nil }, `quota of "User:a": no value`},
		{"empty values", func(s *snapshotV1) { s.Quotas[0].Values = map[string]int64{} }, "quota of the default: no value"},
		{"bad principal", func(s *snapshotV1) { s.Quotas[2].Principal = "bob" }, `quota entity 2 ("bob"): principal "bob"`},
		{"wildcard", func(s *snapshotV1) { s.Quotas[1].Principal = wire.WildcardPrincipal }, "User:* is no principal for a quota"},
		{"unknown key", func(s *snapshotV1) { s.Quotas[1].Values = map[string]int64{"request_percentage": 5000} }, `quota key "request_percentage"`},
		{"low rate", func(s *snapshotV1) { s.Quotas[2].Values[consume] = 0 }, "consumer_byte_rate=0: want bytes per second, at least 1024"},
		{"too many", func(s *snapshotV1) { s.Quotas = make([]snapQuota, wire.MaxQuotaEntities+1) }, "10001 quota entities"},
		{"old version", func(s *snapshotV1) { s.MetadataVersion = 5 }, "client quotas in an image of metadata version 5"},
	} {
		s := img.toSnapshot()
		c.mutate(&s)
		_, err := UnmarshalSnapshot(0, encodeSnapshot(s))
		if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%s: %v, want a corrupt snapshot saying %q", c.name, err, c.msg)
		}
	}
	want := []wire.ClientQuota{
		{Principal: "", Values: map[string]int64{consume: mib}},
		{Principal: "User:a", Values: map[string]int64{produce: 2 * mib}},
		{Principal: "User:b", Values: map[string]int64{produce: mib, consume: mib}},
	}
	if got := img.ClientQuotas(); !reflect.DeepEqual(got, want) {
		t.Fatalf("mutating a snapshot changed the image: %v", got)
	}
	var snapWant []snapQuota
	for _, q := range want {
		snapWant = append(snapWant, snapQuota{Principal: q.Principal, Values: q.Values})
	}
	if got := img.toSnapshot().Quotas; !reflect.DeepEqual(got, snapWant) {
		t.Fatalf("snapshot quotas %v, want %v", got, snapWant)
	}
	again, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again, img) {
		t.Fatalf("round trip: %v", err)
	}
}

// Quota values are maps, which msgpack's SetSortMapKeys leaves in Go's
// random order unless they map to strings: the record and the snapshot
// encode their keys sorted, so the bytes, and the image's hash, are the
// same every time (and on every node); both decode as the wire types'
// layout.
func TestQuotaEncodingsCanonical(t *testing.T) {
	rec := ClientQuotasChanged{Entries: []wire.QuotaEntry{
		setQuota("", produce, mib, consume, 2*mib), {Principal: "User:a", Set: map[string]int64{consume: mib, produce: 3 * mib}, Delete: nil},
		deleteQuota("User:b", consume, produce)}}
	img := mustApply(t, upImage(t, 1), []Record{rec})
	entry, _ := EncodeEntry(rec)
	snap, hash := img.MarshalSnapshot(), img.Hash()
	for range 64 {
		// Fresh maps, too: each may iterate from another start.
		again := ClientQuotasChanged{Entries: []wire.QuotaEntry{
			setQuota("", consume, 2*mib, produce, mib), setQuota("User:a", produce, 3*mib, consume, mib), deleteQuota("User:b", consume, produce)}}
		if e, _ := EncodeEntry(again); !bytes.Equal(e, entry) {
			t.Fatal("a record's encoding varies")
		}
		if e, _ := EncodeEntry(rec); !bytes.Equal(e, entry) {
			t.Fatal("a record's encoding varies")
		}
		if !bytes.Equal(img.MarshalSnapshot(), snap) || img.Hash() != hash {
			t.Fatal("a snapshot's encoding varies")
		}
	}
	// The record's bytes are the struct's (as msgpack encodes
	// wire.QuotaEntry), keys sorted.
	var generic map[string][]map[string]any
	if err := msgpack.Unmarshal(entry[recordHeaderLen:], &generic); err != nil {
		t.Fatal(err)
	}
	if len(generic["entries"]) != 3 || generic["entries"][0]["pr"] != "" || generic["entries"][2]["set"] != nil || len(generic["entries"][2]["del"].([]any)) != 2 {
		t.Fatalf("record layout %v", generic)
	}
	var plain struct {
		Entries []wire.QuotaEntry `msgpack:"entries"`
	}
	if err := msgpack.Unmarshal(entry[recordHeaderLen:], &plain); err != nil || !reflect.DeepEqual(plain.Entries, rec.Entries) {
		t.Fatalf("record decoded as wire.QuotaEntry: %+v %v", plain, err)
	}
	var snapPlain struct {
		Quotas []wire.ClientQuota `msgpack:"quotas"`
	}
	if err := msgpack.Unmarshal(snap[1:], &snapPlain); err != nil || !reflect.DeepEqual(snapPlain.Quotas, img.ClientQuotas()) {
		t.Fatalf("snapshot quotas decoded as wire.ClientQuota: %+v %v", snapPlain, err)
	}
}

// ClientQuota runs on every produce and fetch: it allocates nothing.
func TestClientQuotaAllocatesNothing(t *testing.T) {
	img := alterQuotas(t, upImage(t, 1), setQuota("", consume, mib), setQuota("User:a", produce, 2*mib))
	principal := strings.Repeat("User:b", 1) // not a constant
	var sink int64
	if n := testing.AllocsPerRun(100, func() {
		for _, p := range []string{"User:a", principal, ""} {
			for _, k := range wire.QuotaKeys {
				r, _ := img.ClientQuota(p, k)
				sink += r
			}
		}
	}); n != 0 {
		t.Fatalf("ClientQuota allocates %v times", n)
	}
	if sink == 0 {
		t.Fatal("no quota read")
	}
}

// TestWriteQuotaFuzzSeeds keeps an entry of two ClientQuotasChanged and
// the version-6 image after it among the decoders' fuzz seeds (-rewrite
// writes them).
func TestWriteQuotaFuzzSeeds(t *testing.T) {
	img := upImage(t, 1)
	recs := []Record{
		ClientQuotasChanged{Entries: []wire.QuotaEntry{setQuota("", consume, mib), setQuota("User:billing", produce, 4*mib, consume, 2*mib)}},
		ClientQuotasChanged{Entries: []wire.QuotaEntry{deleteQuota("User:billing", consume), setQuota("User:audit", produce, mib)}},
	}
	entry, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-quotas", entry, "seed-image-quotas", mustApply(t, img, recs).MarshalSnapshot())
}
