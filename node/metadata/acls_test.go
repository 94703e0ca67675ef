package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"

	"paymentlog/node/acl"
	"paymentlog/wire"
)

func allowRead(principal, topic string) wire.ACLBinding {
	return wire.ACLBinding{Principal: principal, ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral,
		Name: topic, Operation: wire.OpRead, Permission: wire.PermissionAllow}
}

var (
	billingRead   = allowRead("User:billing", "payments")
	auditRead     = allowRead("User:audit", "payments")
	billingGroup  = wire.ACLBinding{Principal: "User:billing", ResourceType: wire.ResourceGroup, PatternType: wire.PatternPrefixed, Name: "billing-", Operation: wire.OpRead, Permission: wire.PermissionAllow}
	everyoneDeny  = wire.ACLBinding{Principal: wire.WildcardPrincipal, ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral, Name: "secrets", Operation: wire.OpAll, Permission: wire.PermissionDeny}
	badOpBinding  = wire.ACLBinding{Principal: "User:bob", ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral, Name: "x", Operation: "rd", Permission: wire.PermissionAllow}
	clusterDescr  = wire.ACLBinding{Principal: "User:ops", ResourceType: wire.ResourceCluster, PatternType: wire.PatternLiteral, Name: wire.ClusterResourceName, Operation: wire.OpDescribe, Permission: wire.PermissionAllow}
	sortedFixture = []wire.ACLBinding{clusterDescr, billingGroup, auditRead, billingRead, everyoneDeny} // acl.Compare order
)

// createACLs decides and applies a creation, returning the image after it.
func createACLs(t *testing.T, img *Image, bs ...wire.ACLBinding) *Image {
	t.Helper()
	recs, _, err := DecideCreateACLs(img, bs)
	if err != nil {
		t.Fatal(err)
	}
	return mustApply(t, img, recs)
}

// Bindings are created and deleted copy-on-write; the image, its delta,
// its snapshot and its hash carry them; the metadata version becomes 5;
// deleting the last one leaves an image like one that never had any.
func TestACLsCreatedAndDeleted(t *testing.T) {
	base := upImage(t, 3)
	if base.ACLs() != nil || base.Version() != 1 {
		t.Fatalf("a fresh image holds %v ACLs at version %d", base.ACLs().Bindings(), base.Version())
	}
	recs, created, err := DecideCreateACLs(base, []wire.ACLBinding{billingRead, everyoneDeny, billingRead})
	if err != nil || created != 2 || len(recs) != 1 {
		t.Fatalf("decide: %v %d %v", recs, created, err)
	}
	want := "ACLsCreated allow User:billing read topic literal:payments; deny User:* all topic literal:secrets"
	if got := FormatRecord(recs[0]); got != want {
		t.Fatalf("format:\n got %s\nwant %s", got, want)
	}
	one, d, err := base.ApplyEntry(base.Offset()+1, recs)
	if err != nil || !d.ACLsChanged || d.Empty() {
		t.Fatalf("apply: delta %+v, %v", d, err)
	}
	if one.Version() != 5 {
		t.Fatalf("version %d, want 5", one.Version())
	}
	two := createACLs(t, one, auditRead, billingGroup, clusterDescr)
	if got := two.ACLs().Bindings(); !reflect.DeepEqual(got, sortedFixture) {
		t.Fatalf("bindings %v, want %v", got, sortedFixture)
	}
	if !two.ACLs().Allows("User:audit", netip.Addr{}, wire.OpDescribe, wire.ResourceTopic, "payments") || two.ACLs().Allows("User:audit", netip.Addr{}, wire.OpRead, wire.ResourceTopic, "secrets") {
		t.Fatal("the image's set does not evaluate its bindings")
	}
	if one.ACLs().Len() != 2 || one.ACLs().Has(auditRead) {
		t.Fatalf("a creation changed the image it was applied to: %v", one.ACLs().Bindings())
	}

	again, err := UnmarshalSnapshot(0, two.MarshalSnapshot())
	if err != nil || again.Hash() != two.Hash() || !reflect.DeepEqual(again.ACLs().Bindings(), sortedFixture) || !reflect.DeepEqual(again, two) {
		t.Fatalf("snapshot round trip: %v", err)
	}
	if d := Diff(one, two); !d.ACLsChanged {
		t.Fatal("Diff misses the ACL change")
	}

	recs, deleted, err := DecideDeleteACLs(two, []wire.ACLFilter{{Principal: "User:billing"}})
	if err != nil || !reflect.DeepEqual(deleted, []wire.ACLBinding{billingGroup, billingRead}) {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	three := mustApply(t, two, recs)
	if got := three.ACLs().Bindings(); !reflect.DeepEqual(got, []wire.ACLBinding{clusterDescr, auditRead, everyoneDeny}) {
		t.Fatalf("after deleting billing's: %v", got)
	}
	if two.ACLs().Len() != 5 {
		t.Fatal("a deletion changed the image it was applied to")
	}

	recs, deleted, err = DecideDeleteACLs(three, []wire.ACLFilter{{}})
	if err != nil || len(deleted) != 3 {
		t.Fatalf("delete all: %v %v", deleted, err)
	}
	empty, d, err := three.ApplyEntry(three.Offset()+1, recs)
	if err != nil || !d.ACLsChanged {
		t.Fatalf("delete all: delta %+v, %v", d, err)
	}
	if empty.ACLs() != nil {
		t.Fatalf("no bindings left, but the image holds a set %#v", empty.ACLs())
	}
	// The same image at version 5 that never had bindings: equal hash,
	// equal snapshot (no "acls" key), equal fields.
	never := *base
	never.metadataVersion = 5
	never.offset = empty.offset
	if empty.Hash() != never.Hash() || !bytes.Equal(empty.MarshalSnapshot(), never.MarshalSnapshot()) || !reflect.DeepEqual(*empty, never) {
		t.Fatal("an image whose bindings were all deleted differs from one that never had any")
	}
	if bytes.Contains(base.MarshalSnapshot(), []byte("acls")) {
		t.Fatal("a snapshot without bindings names them")
	}
}

// Every rejection of the ACL records, which leave the image unchanged (and
// the delta empty); a binding created and deleted in one entry changes
// nothing.
func TestACLRecordsRejected(t *testing.T) {
	img := createACLs(t, upImage(t, 1), billingRead)
	many := make([]wire.ACLBinding, wire.MaxACLsPerRequest+1)
	for i := range many {
		many[i] = allowRead(fmt.Sprintf("User:u%d", i), "t")
	}
	for _, c := range []struct {
		name string
		rec  Record
		why  string
	}{
		{"create none", ACLsCreated{}, "0 ACL bindings created"},
		{"create too many", ACLsCreated{ACLs: many}, "1001 ACL bindings created"},
		{"create invalid", ACLsCreated{ACLs: []wire.ACLBinding{badOpBinding}}, `operation "rd"`},
		{"create existing", ACLsCreated{ACLs: []wire.ACLBinding{auditRead, billingRead}}, "exists"},
		{"create twice", ACLsCreated{ACLs: []wire.ACLBinding{auditRead, everyoneDeny, auditRead}}, "named twice"},
		{"delete none", ACLsDeleted{}, "0 ACL bindings deleted"},
		{"delete absent", ACLsDeleted{ACLs: []wire.ACLBinding{billingRead, auditRead}}, "no ACL binding"},
		{"delete twice", ACLsDeleted{ACLs: []wire.ACLBinding{billingRead, billingRead}}, "named twice"},
	} {
		next, d, err := img.ApplyEntry(img.Offset()+1, []Record{c.rec})
		var rej *RejectError
		if !errors.As(err, &rej) || !strings.Contains(rej.Reason, c.why) {
			t.Fatalf("%s: %v, want a rejection saying %q", c.name, err, c.why)
		}
		if !reflect.DeepEqual(next.ACLs(), img.ACLs()) || d.ACLsChanged || !d.Empty() {
			t.Fatalf("%s: a rejected record changed the image", c.name)
		}
	}

	// Created and deleted within one entry: no change, and Diff agrees.
	next, d, err := img.ApplyEntry(img.Offset()+1, []Record{ACLsCreated{ACLs: []wire.ACLBinding{auditRead}}, ACLsDeleted{ACLs: []wire.ACLBinding{auditRead}}})
	if err != nil || d.ACLsChanged || Diff(img, next).ACLsChanged || !reflect.DeepEqual(next.ACLs(), img.ACLs()) {
		t.Fatalf("created and deleted in one entry: delta %+v, %v", d, err)
	}
	// The last one deleted and another created in one entry.
	next = mustApply(t, img, []Record{ACLsDeleted{ACLs: []wire.ACLBinding{billingRead}}, ACLsCreated{ACLs: []wire.ACLBinding{auditRead}}})
	if got := next.ACLs().Bindings(); !reflect.DeepEqual(got, []wire.ACLBinding{auditRead}) {
		t.Fatalf("bindings %v", got)
	}
}

// fullACLs returns img holding n generated bindings (User:u0.. reading t).
func fullACLs(img *Image, n int) *Image {
	bs := make([]wire.ACLBinding, n)
	for i := range bs {
		bs[i] = allowRead(fmt.Sprintf("User:u%d", i), "t")
	}
	full := *img
	full.acls = acl.NewSet(bs)
	full.metadataVersion = 5
	return &full
}

// The cluster holds at most wire.MaxACLs bindings: a record beyond is
// rejected, a request beyond refused; one up to the bound applies.
func TestMaxACLs(t *testing.T) {
	almost := fullACLs(upImage(t, 1), wire.MaxACLs-1)
	recs, created, err := DecideCreateACLs(almost, []wire.ACLBinding{billingRead, allowRead("User:u0", "t")})
	if err != nil || created != 1 {
		t.Fatalf("the last binding: %d %v", created, err)
	}
	full := mustApply(t, almost, recs)
	if full.ACLs().Len() != wire.MaxACLs {
		t.Fatalf("%d bindings", full.ACLs().Len())
	}
	_, _, err = DecideCreateACLs(full, []wire.ACLBinding{auditRead})
	wantCode(t, err, wire.InvalidRequest, "would hold 10001 ACL bindings, more than 10000")
	if _, _, err := full.ApplyEntry(full.Offset()+1, []Record{ACLsCreated{ACLs: []wire.ACLBinding{auditRead}}}); !errors.Is(err, ErrRejected) {
		t.Fatalf("a binding beyond MaxACLs applied: %v", err)
	}
	// Full, a request that adds nothing still succeeds.
	if recs, created, err := DecideCreateACLs(full, []wire.ACLBinding{billingRead}); err != nil || recs != nil || created != 0 {
		t.Fatalf("retry at the bound: %v %d %v", recs, created, err)
	}
	// Every binding deleted in one record.
	recs, deleted, err := DecideDeleteACLs(full, []wire.ACLFilter{{}})
	if err != nil || len(deleted) != wire.MaxACLs {
		t.Fatalf("delete all: %d %v", len(deleted), err)
	}
	if empty := mustApply(t, full, recs); empty.ACLs() != nil {
		t.Fatal("bindings left")
	}
}

// DecideCreateACLs: refusals with their codes, duplicates dropped, a retry
// that creates nothing, and a broker whose build does not apply version 5.
func TestDecideCreateACLs(t *testing.T) {
	img := upImage(t, 3)
	for _, c := range []struct {
		name string
		bs   []wire.ACLBinding
		msg  string
	}{
		{"none", nil, "no ACL binding to create"},
		{"too many", make([]wire.ACLBinding, wire.MaxACLsPerRequest+1), "1001 ACL bindings in one request, at most 1000"},
		{"invalid", []wire.ACLBinding{billingRead, badOpBinding}, `ACL binding 1 ("allow User:bob rd topic literal:x"): operation "rd" on a topic`},
		{"bad principal", []wire.ACLBinding{allowRead("bob", "t")}, `principal "bob"`},
		{"cluster name", []wire.ACLBinding{{Principal: "User:a", ResourceType: wire.ResourceCluster, PatternType: wire.PatternLiteral, Name: "c", Operation: wire.OpAlter, Permission: wire.PermissionAllow}}, "the cluster resource is literal:cluster"},
	} {
		recs, created, err := DecideCreateACLs(img, c.bs)
		if recs != nil || created != 0 {
			t.Fatalf("%s: records %v, created %d", c.name, recs, created)
		}
		wantCode(t, err, wire.InvalidRequest, c.msg)
	}

	recs, created, err := DecideCreateACLs(img, []wire.ACLBinding{auditRead, billingRead, auditRead})
	if err != nil || created != 2 || !reflect.DeepEqual(recs, []Record{ACLsCreated{ACLs: []wire.ACLBinding{auditRead, billingRead}}}) {
		t.Fatalf("duplicates in the request: %v %d %v", recs, created, err)
	}
	next := mustApply(t, img, recs)
	if recs, created, err := DecideCreateACLs(next, []wire.ACLBinding{billingRead, auditRead}); err != nil || recs != nil || created != 0 {
		t.Fatalf("retry: %v %d %v", recs, created, err)
	}
	recs, created, err = DecideCreateACLs(next, []wire.ACLBinding{billingRead, everyoneDeny})
	if err != nil || created != 1 || !reflect.DeepEqual(recs, []Record{ACLsCreated{ACLs: []wire.ACLBinding{everyoneDeny}}}) {
		t.Fatalf("one new of two: %v %d %v", recs, created, err)
	}

	// A broker whose build applies version 4 holds creations back (a retry
	// that creates nothing still succeeds).
	old := mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 4}})
	_, _, err = DecideCreateACLs(old, []wire.ACLBinding{billingRead})
	wantCode(t, err, wire.UnsupportedVersion, "creating ACLs needs metadata version 5, which the builds of brokers [4 (version 4)]")
	oldWith := mustApply(t, next, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 4}})
	if recs, created, err := DecideCreateACLs(oldWith, []wire.ACLBinding{billingRead}); err != nil || recs != nil || created != 0 {
		t.Fatalf("retry with an old broker: %v %d %v", recs, created, err)
	}
}

// DecideDeleteACLs: refusals, the union of the filters (sorted, each
// binding once), nothing matched, and a broker whose build does not apply
// version 5.
func TestDecideDeleteACLs(t *testing.T) {
	img := createACLs(t, upImage(t, 3), sortedFixture...)
	for _, c := range []struct {
		name string
		fs   []wire.ACLFilter
		msg  string
	}{
		{"none", nil, "no ACL filter"},
		{"too many", make([]wire.ACLFilter, wire.MaxACLsPerRequest+1), "1001 ACL filters in one request, at most 1000"},
		{"long field", []wire.ACLFilter{{}, {Name: strings.Repeat("n", wire.MaxPrincipalLen+1)}}, "ACL filter 1: filter field longer than 256 bytes"},
	} {
		_, _, err := DecideDeleteACLs(img, c.fs)
		wantCode(t, err, wire.InvalidRequest, c.msg)
	}

	// Overlapping filters: billing's bindings and every binding for topic
	// payments.
	recs, deleted, err := DecideDeleteACLs(img, []wire.ACLFilter{
		{Name: "payments", ResourceType: wire.ResourceTopic}, {Principal: "User:billing"}, {Principal: "User:nobody"}})
	want := []wire.ACLBinding{billingGroup, auditRead, billingRead}
	if err != nil || !reflect.DeepEqual(deleted, want) || !reflect.DeepEqual(recs, []Record{ACLsDeleted{ACLs: want}}) {
		t.Fatalf("union: %v %v %v", recs, deleted, err)
	}
	next := mustApply(t, img, recs)
	if got := next.ACLs().Bindings(); !reflect.DeepEqual(got, []wire.ACLBinding{clusterDescr, everyoneDeny}) {
		t.Fatalf("left %v", got)
	}
	// A filter names a pattern as written: "pay" selects nothing.
	if recs, deleted, err := DecideDeleteACLs(next, []wire.ACLFilter{{Principal: "User:billing"}, {Name: "pay"}}); err != nil || recs != nil || deleted != nil {
		t.Fatalf("nothing matched: %v %v %v", recs, deleted, err)
	}
	if recs, deleted, err := DecideDeleteACLs(upImage(t, 1), []wire.ACLFilter{{}}); err != nil || recs != nil || deleted != nil {
		t.Fatalf("no bindings at all: %v %v %v", recs, deleted, err)
	}

	old := mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 4}})
	_, _, err = DecideDeleteACLs(old, []wire.ACLFilter{{Principal: "User:billing"}})
	wantCode(t, err, wire.UnsupportedVersion, "deleting ACLs needs metadata version 5")
	if recs, _, err := DecideDeleteACLs(old, []wire.ACLFilter{{Principal: "User:nobody"}}); err != nil || recs != nil {
		t.Fatalf("nothing to delete with an old broker: %v %v", recs, err)
	}
}

// A snapshot's bindings are checked like records: at most MaxACLs, valid,
// sorted, unique, and only at metadata version 5 or later.
func TestSnapshotACLsChecked(t *testing.T) {
	img := createACLs(t, upImage(t, 1), sortedFixture...)
	for _, c := range []struct {
		name   string
		mutate func(s *snapshotV1)
		msg    string
	}{
		{"unsorted", func(s *snapshotV1) { s.ACLs[0], s.ACLs[1] = s.ACLs[1], s.ACLs[0] }, "not sorted or repeated"},
		{"repeated", func(s *snapshotV1) { s.ACLs[2] = s.ACLs[1] }, "not sorted or repeated"},
		{"invalid", func(s *snapshotV1) { s.ACLs[1].Permission = "maybe" }, `ACL binding 1: permission "maybe"`},
		{"too many", func(s *snapshotV1) { s.ACLs = make([]wire.ACLBinding, wire.MaxACLs+1) }, "10001 ACL bindings"},
		{"old version", func(s *snapshotV1) { s.MetadataVersion = 4 }, "ACL bindings (of metadata version 5) in an image of metadata version 4"},
	} {
		s := img.toSnapshot()
		c.mutate(&s)
		_, err := UnmarshalSnapshot(0, encodeSnapshot(s))
		if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%s: %v, want a corrupt snapshot saying %q", c.name, err, c.msg)
		}
	}
	if got := img.ACLs().Bindings(); !reflect.DeepEqual(got, sortedFixture) {
		t.Fatalf("mutating a snapshot changed the image: %v", got)
	}
	if !slices.IsSortedFunc(img.toSnapshot().ACLs, acl.Compare) {
		t.Fatal("snapshot bindings not sorted")
	}
}

// TestWriteACLFuzzSeeds keeps an entry of both ACL records and the
// version-5 image holding bindings among the decoders' fuzz seeds
// (-rewrite writes them).
func TestWriteACLFuzzSeeds(t *testing.T) {
	img := upImage(t, 1)
	recs := []Record{ACLsCreated{ACLs: sortedFixture}, ACLsDeleted{ACLs: []wire.ACLBinding{auditRead}}}
	entry, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-acls", entry, "seed-image-acls", mustApply(t, img, recs).MarshalSnapshot())
}

// Bindings with a host: valid hosts only, each spelled one way; creating
// one needs metadata version 8 of every broker and raises the image's
// version to it (a snapshot holding one below it is corrupt); a binding
// with a host and one without are two bindings, which a filter's host tells
// apart.
func TestACLHosts(t *testing.T) {
	img := upImage(t, 3)
	fromNet := billingRead
	fromNet.Host = "10.1.0.0/16"
	for host, msg := range map[string]string{
		"10.1.2.3/16":     "write the network as 10.1.0.0/16",
		"::FFFF:10.1.2.3": "write it as ::ffff:10.1.2.3",
		"fe80::1%eth0":    "no zone allowed",
		"example.com":     "not an IP address or CIDR network",
		"10.1.2.3/33":     "not an IP address or CIDR network",
		"*":               "not an IP address or CIDR network",
	} {
		b := billingRead
		b.Host = host
		_, _, err := DecideCreateACLs(img, []wire.ACLBinding{b})
		wantCode(t, err, wire.InvalidRequest, msg)
	}
	old := mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 7}})
	_, _, err := DecideCreateACLs(old, []wire.ACLBinding{billingRead, fromNet})
	wantCode(t, err, wire.UnsupportedVersion, "creating ACLs with a host needs metadata version 8, which the builds of brokers [4 (version 7)]")
	if v := createACLs(t, old, billingRead).Version(); v != 5 {
		t.Fatalf("a binding without a host took the image to version %d, want 5", v)
	}

	next := createACLs(t, img, billingRead, fromNet)
	if next.Version() != 8 || next.ACLs().Len() != 2 {
		t.Fatalf("version %d, %v", next.Version(), next.ACLs().Bindings())
	}
	if want := "allow User:billing read topic literal:payments from 10.1.0.0/16"; fromNet.String() != want {
		t.Fatalf("String: %s", fromNet)
	}
	again, err := UnmarshalSnapshot(0, next.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again.ACLs().Bindings(), next.ACLs().Bindings()) {
		t.Fatalf("snapshot round trip: %v, %v", again.ACLs().Bindings(), err)
	}
	s := next.toSnapshot()
	s.MetadataVersion = 7
	if _, err := UnmarshalSnapshot(0, encodeSnapshot(s)); !errors.Is(err, ErrCorruptSnapshot) ||
		!strings.Contains(err.Error(), "ACL bindings (of metadata version 8) in an image of metadata version 7") {
		t.Fatalf("a host binding at version 7: %v", err)
	}
	entry, err := EncodeEntry(ACLsCreated{ACLs: []wire.ACLBinding{fromNet}})
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-acls-hosts", entry, "seed-image-acls-hosts", next.MarshalSnapshot())
	for host, want := range map[string][]wire.ACLBinding{
		wire.AnyHostFilter: {billingRead},
		"10.1.0.0/16":      {fromNet},
		"":                 {billingRead, fromNet},
		"10.1.0.0/24":      nil,
	} {
		_, deleted, err := DecideDeleteACLs(next, []wire.ACLFilter{{Principal: "User:billing", Host: host}})
		if err != nil || !reflect.DeepEqual(deleted, want) {
			t.Fatalf("filter host %q: %v, %v; want %v", host, deleted, err, want)
		}
	}
}
