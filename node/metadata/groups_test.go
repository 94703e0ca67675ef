package metadata

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"paymentlog/wire"
)

// groupsImage is upImage(3) with topics a (3 partitions) and b (1).
func groupsImage(t *testing.T) *Image {
	t.Helper()
	img := upImage(t, 3)
	img = mustApply(t, img, mustDecide(t)(DecideCreateTopic(img, CreateTopicEvent{Name: "a", ID: "id-a", Partitions: 3, RF: 3, MinISR: 2})))
	return mustApply(t, img, mustDecide(t)(DecideCreateTopic(img, CreateTopicEvent{Name: "b", ID: "id-b", Partitions: 1, RF: 3, MinISR: 2})))
}

func commit(t *testing.T, img *Image, group string, nowMs int64, offs ...wire.GroupOffset) *Image {
	t.Helper()
	return mustApply(t, img, mustDecide(t)(DecideCommitOffsets(img, CommitOffsetsEvent{Group: group, Offsets: offs, NowMs: nowMs})))
}

// A commit stores offsets per partition, creating the group; a later one
// overwrites the partitions it names and keeps the others; the image, its
// snapshot and its hash carry them, and the metadata version becomes 4.
func TestGroupOffsetsCommitted(t *testing.T) {
	img := groupsImage(t)
	if img.Version() != 1 {
		t.Fatalf("version %d before any group", img.Version())
	}
	img = commit(t, img, "billing", 1000,
		wire.GroupOffset{Topic: "a", Partition: 0, Offset: 10, LeaderEpoch: 1, Metadata: "m0"},
		wire.GroupOffset{Topic: "a", Partition: 2, Offset: 7, LeaderEpoch: -1},
		wire.GroupOffset{Topic: "b", TopicID: "id-b", Partition: 0, Offset: 0, LeaderEpoch: 0})
	img = commit(t, img, "billing", 2000, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 12, LeaderEpoch: 2})
	img = commit(t, img, "audit", 1500, wire.GroupOffset{Topic: "a", Partition: 1, Offset: 3, LeaderEpoch: -1})
	g, ok := img.Group("billing")
	if !ok || g.LastCommitMs != 2000 {
		t.Fatalf("group %+v %v", g, ok)
	}
	want := map[GroupPartition]GroupOffset{
		{"a", 0}: {TopicID: "id-a", Offset: 12, LeaderEpoch: 2, CommitTimeMs: 2000},
		{"a", 2}: {TopicID: "id-a", Offset: 7, LeaderEpoch: -1, CommitTimeMs: 1000},
		{"b", 0}: {TopicID: "id-b", Offset: 0, LeaderEpoch: 0, CommitTimeMs: 1000},
	}
	if !reflect.DeepEqual(g.Offsets, want) {
		t.Fatalf("offsets %+v, want %+v", g.Offsets, want)
	}
	if got := g.SortedOffsets(); !reflect.DeepEqual(got, []GroupPartition{{"a", 0}, {"a", 2}, {"b", 0}}) {
		t.Fatalf("sorted %v", got)
	}
	if names := []string{img.Groups()[0].Name, img.Groups()[1].Name}; names[0] != "audit" || names[1] != "billing" {
		t.Fatalf("groups %v", names)
	}
	if img.Version() != 4 {
		t.Fatalf("version %d, want 4", img.Version())
	}
	again, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again, img) || again.Hash() != img.Hash() {
		t.Fatalf("snapshot round trip: %v", err)
	}
	// Images are immutable: the earlier one does not see the later commit.
	before := commit(t, groupsImage(t), "x", 5, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 1})
	after := commit(t, before, "x", 6, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 2})
	if g, _ := before.Group("x"); g.Offsets[GroupPartition{"a", 0}].Offset != 1 {
		t.Fatal("a commit changed the image it was applied to")
	}
	if g, _ := after.Group("x"); g.Offsets[GroupPartition{"a", 0}].Offset != 2 {
		t.Fatal("second commit lost")
	}
}

// Every refusal of wire.OffsetCommitRequest, with its code.
func TestDecideCommitOffsetsRefusals(t *testing.T) {
	img := groupsImage(t)
	o := func(topic string, p int32, off int64) wire.GroupOffset {
		return wire.GroupOffset{Topic: topic, Partition: p, Offset: off, LeaderEpoch: -1}
	}
	long := o("a", 0, 1)
	long.Metadata = strings.Repeat("x", wire.MaxOffsetMetadataLen+1)
	oldID := o("a", 0, 1)
	oldID.TopicID = "id-old"
	badEpoch := o("a", 0, 1)
	badEpoch.LeaderEpoch = -2
	for _, c := range []struct {
		name  string
		group string
		offs  []wire.GroupOffset
		code  wire.ErrorCode
		msg   string
	}{
		{"empty name", "", []wire.GroupOffset{o("a", 0, 1)}, wire.InvalidGroupID, "group name is empty"},
		{"bad name", "a b", []wire.GroupOffset{o("a", 0, 1)}, wire.InvalidGroupID, "only letters"},
		{"dot", "..", []wire.GroupOffset{o("a", 0, 1)}, wire.InvalidGroupID, "not allowed"},
		{"long name", strings.Repeat("g", wire.MaxGroupNameLen+1), []wire.GroupOffset{o("a", 0, 1)}, wire.InvalidGroupID, "longer than"},
		{"nothing", "g", nil, wire.InvalidRequest, "no offsets"},
		{"twice", "g", []wire.GroupOffset{o("a", 0, 1), o("a", 0, 2)}, wire.InvalidRequest, "a-0 named twice"},
		{"unknown topic", "g", []wire.GroupOffset{o("c", 0, 1)}, wire.UnknownTopicOrPartition, `topic "c" does not exist`},
		{"old incarnation", "g", []wire.GroupOffset{oldID}, wire.UnknownTopicOrPartition, "deleted and re-created"},
		{"no partition", "g", []wire.GroupOffset{o("a", 3, 1)}, wire.UnknownTopicOrPartition, "a-3 does not exist"},
		{"negative partition", "g", []wire.GroupOffset{o("a", -1, 1)}, wire.UnknownTopicOrPartition, "does not exist"},
		{"negative offset", "g", []wire.GroupOffset{o("a", 0, -1)}, wire.InvalidRequest, "offset -1 for a-0 is negative"},
		{"bad epoch", "g", []wire.GroupOffset{badEpoch}, wire.InvalidRequest, "leader epoch -2"},
		{"long metadata", "g", []wire.GroupOffset{long}, wire.InvalidRequest, "metadata of a-0"},
		{"too many", "g", make([]wire.GroupOffset, wire.MaxCommitOffsets+1), wire.InvalidRequest, "at most 10000"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecideCommitOffsets(img, CommitOffsetsEvent{Group: c.group, Offsets: c.offs, NowMs: 1})
			wantCode(t, err, c.code, c.msg)
		})
	}

	// A broker whose build does not apply version 4 holds commits back.
	old := mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: 3}})
	_, err := DecideCommitOffsets(old, CommitOffsetsEvent{Group: "g", Offsets: []wire.GroupOffset{o("a", 0, 1)}, NowMs: 1})
	wantCode(t, err, wire.UnsupportedVersion, "brokers [4 (version 3)]")

	// The cluster holds at most MaxGroups: an existing group still commits.
	full := *commit(t, img, "kept", 1, o("a", 0, 1))
	full.groups = map[string]*GroupState{}
	for i := 0; i < wire.MaxGroups; i++ {
		full.groups[strings.Repeat("g", 1+i%200)+string(rune('a'+i/200%26))+string(rune('a'+i/5200))] = &GroupState{}
	}
	full.groups["kept"] = img.groups["kept"]
	if len(full.groups) < wire.MaxGroups {
		t.Fatalf("test built only %d groups", len(full.groups))
	}
	_, err = DecideCommitOffsets(&full, CommitOffsetsEvent{Group: "new", Offsets: []wire.GroupOffset{o("a", 0, 1)}, NowMs: 1})
	wantCode(t, err, wire.InvalidRequest, "the most it holds")
	if _, err := DecideCommitOffsets(&full, CommitOffsetsEvent{Group: "kept", Offsets: []wire.GroupOffset{o("a", 0, 2)}, NowMs: 2}); err != nil {
		t.Fatalf("existing group refused: %v", err)
	}
}

// A record re-checks what the decision checked: one decided before the
// topic was deleted (or re-created) is rejected on every node alike.
func TestGroupOffsetsCommittedRejected(t *testing.T) {
	img := groupsImage(t)
	rec := GroupOffsetsCommitted{Group: "g", TimeMs: 1, Offsets: []GroupOffsetRecord{{Topic: "a", TopicID: "id-a", Partition: 0, Offset: 5, LeaderEpoch: -1}}}
	gone := mustApply(t, img, mustDecide(t)(DecideDeleteTopic(img, "a")))
	for _, c := range []struct {
		name string
		img  *Image
		rec  GroupOffsetsCommitted
		why  string
	}{
		{"topic deleted", gone, rec, `no topic "a" with id "id-a"`},
		{"bad name", img, GroupOffsetsCommitted{Group: "a/b", Offsets: rec.Offsets}, "only letters"},
		{"no offsets", img, GroupOffsetsCommitted{Group: "g"}, "0 offsets"},
		{"negative time", img, GroupOffsetsCommitted{Group: "g", TimeMs: -1, Offsets: rec.Offsets}, "negative commit time"},
		{"twice", img, GroupOffsetsCommitted{Group: "g", Offsets: append(rec.Offsets, rec.Offsets...)}, "named twice"},
	} {
		next, _, err := c.img.ApplyEntry(c.img.Offset()+1, []Record{c.rec})
		var rej *RejectError
		if !errors.As(err, &rej) || !strings.Contains(rej.Reason, c.why) {
			t.Fatalf("%s: %v, want a rejection saying %q", c.name, err, c.why)
		}
		if len(next.Groups()) != len(c.img.Groups()) || next.Version() != c.img.Version() {
			t.Fatalf("%s: a rejected record changed the image", c.name)
		}
	}
}

// Deleting a topic deletes its offsets from every group (the group stays);
// the topic re-created under its name starts without any, and a commit for
// the old incarnation is refused.
func TestTopicDeletionDropsGroupOffsets(t *testing.T) {
	img := groupsImage(t)
	img = commit(t, img, "g1", 1, wire.GroupOffset{Topic: "a", Partition: 1, Offset: 4}, wire.GroupOffset{Topic: "b", Partition: 0, Offset: 9})
	img = commit(t, img, "g2", 2, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 1})
	untouched := commit(t, img, "g3", 3, wire.GroupOffset{Topic: "b", Partition: 0, Offset: 2})
	img = mustApply(t, untouched, mustDecide(t)(DecideDeleteTopic(untouched, "a")))
	g1, _ := img.Group("g1")
	g2, ok2 := img.Group("g2")
	if !reflect.DeepEqual(g1.SortedOffsets(), []GroupPartition{{"b", 0}}) || !ok2 || len(g2.Offsets) != 0 {
		t.Fatalf("after deleting a: g1 %v, g2 %v (%v)", g1.Offsets, g2.Offsets, ok2)
	}
	if g, _ := untouched.Group("g1"); len(g.Offsets) != 2 {
		t.Fatal("the deletion changed the image it was applied to")
	}
	img = mustApply(t, img, mustDecide(t)(DecideCreateTopic(img, CreateTopicEvent{Name: "a", ID: "id-a2", Partitions: 1, RF: 3, MinISR: 2})))
	if g, _ := img.Group("g2"); len(g.Offsets) != 0 {
		t.Fatalf("re-created topic inherited offsets: %v", g.Offsets)
	}
	_, err := DecideCommitOffsets(img, CommitOffsetsEvent{Group: "g2", NowMs: 4,
		Offsets: []wire.GroupOffset{{Topic: "a", TopicID: "id-a", Partition: 0, Offset: 5}}})
	wantCode(t, err, wire.UnknownTopicOrPartition, "deleted and re-created")
	img = commit(t, img, "g2", 5, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 6})
	if g, _ := img.Group("g2"); g.Offsets[GroupPartition{"a", 0}].TopicID != "id-a2" {
		t.Fatalf("commit after re-creation: %+v", g.Offsets)
	}
	again, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
	if err != nil || !reflect.DeepEqual(again, img) {
		t.Fatalf("snapshot round trip: %v", err)
	}
}

// DeleteGroup removes a group; deleting it again is GroupIDNotFound.
func TestDeleteGroup(t *testing.T) {
	img := commit(t, groupsImage(t), "g", 1, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 1})
	_, err := DecideDeleteGroup(img, "nope")
	wantCode(t, err, wire.GroupIDNotFound, "group nope does not exist")
	_, err = DecideDeleteGroup(img, "")
	wantCode(t, err, wire.InvalidGroupID, "empty")
	next := mustApply(t, img, mustDecide(t)(DecideDeleteGroup(img, "g")))
	if _, ok := next.Group("g"); ok || len(next.Groups()) != 0 {
		t.Fatal("group still there")
	}
	if _, ok := img.Group("g"); !ok {
		t.Fatal("the deletion changed the image it was applied to")
	}
	_, err = DecideDeleteGroup(next, "g")
	wantCode(t, err, wire.GroupIDNotFound, "does not exist")
	if _, _, err := next.ApplyEntry(next.Offset()+1, []Record{GroupDeleted{Group: "g"}}); !errors.Is(err, ErrRejected) {
		t.Fatalf("deleting a missing group applied: %v", err)
	}
	// Deleted in the same entry as it was created: gone.
	both := mustApply(t, img, []Record{
		GroupOffsetsCommitted{Group: "h", TimeMs: 2, Offsets: []GroupOffsetRecord{{Topic: "a", TopicID: "id-a", Partition: 0, Offset: 1, LeaderEpoch: -1}}},
		GroupDeleted{Group: "h"}})
	if _, ok := both.Group("h"); ok {
		t.Fatal("group created and deleted in one entry survived")
	}
	// The last group deleted, then another created, in one entry.
	again := mustApply(t, img, []Record{GroupDeleted{Group: "g"},
		GroupOffsetsCommitted{Group: "i", TimeMs: 3, Offsets: []GroupOffsetRecord{{Topic: "a", TopicID: "id-a", Partition: 0, Offset: 1, LeaderEpoch: -1}}}})
	if gs := again.Groups(); len(gs) != 1 || gs[0].Name != "i" {
		t.Fatalf("groups %v", gs)
	}
}

// Groups that have not committed for offsets.retention.ms expire: 7 days by
// default, the cluster config when set, never with -1.
func TestDecideExpireGroups(t *testing.T) {
	img := groupsImage(t)
	day := int64(24 * 3600 * 1000)
	img = commit(t, img, "old", 1*day, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 1})
	img = commit(t, img, "new", 5*day, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 1})
	if recs := DecideExpireGroups(img, 8*day); len(recs) != 0 {
		t.Fatalf("expired within 7 days: %v", recs)
	}
	recs := DecideExpireGroups(img, 8*day+1)
	if !reflect.DeepEqual(recs, []Record{GroupDeleted{Group: "old", Expired: true}}) {
		t.Fatalf("expired %v", recs)
	}
	next := mustApply(t, img, recs)
	if gs := next.Groups(); len(gs) != 1 || gs[0].Name != "new" {
		t.Fatalf("left %v", gs)
	}
	short := mustApply(t, img, mustDecide(t)(DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigOffsetsRetention: "1000"}})))
	if short.OffsetsRetentionMs() != 1000 {
		t.Fatalf("retention %d", short.OffsetsRetentionMs())
	}
	if recs := DecideExpireGroups(short, 5*day+1001); len(recs) != 2 {
		t.Fatalf("with 1 s retention: %v", recs)
	}
	never := mustApply(t, img, mustDecide(t)(DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigOffsetsRetention: "-1"}})))
	if recs := DecideExpireGroups(never, 1000*day); len(recs) != 0 {
		t.Fatalf("retention -1 expired %v", recs)
	}
	for _, bad := range []string{"0", "-2", "x", "1.5"} {
		if _, err := DecideAlterClusterConfigs(img, AlterClusterConfigsEvent{Set: map[string]string{ConfigOffsetsRetention: bad}}); err == nil {
			t.Fatalf("retention %q accepted", bad)
		}
	}
}

// A snapshot's groups are checked like records: sorted, unique, valid
// names, offsets of partitions the snapshot holds.
func TestSnapshotGroupsChecked(t *testing.T) {
	img := commit(t, groupsImage(t), "g", 7, wire.GroupOffset{Topic: "a", Partition: 0, Offset: 1})
	img = commit(t, img, "h", 8, wire.GroupOffset{Topic: "b", Partition: 0, Offset: 1})
	for _, c := range []struct {
		name   string
		mutate func(s *snapshotV1)
		msg    string
	}{
		{"unsorted", func(s *snapshotV1) { s.Groups[0], s.Groups[1] = s.Groups[1], s.Groups[0] }, "not sorted or repeated"},
		{"repeated", func(s *snapshotV1) { s.Groups[1] = s.Groups[0] }, "not sorted or repeated"},
		{"bad name", func(s *snapshotV1) { s.Groups[0].Name = "a b" }, "only letters"},
		{"unknown topic", func(s *snapshotV1) { s.Groups[0].Offsets[0].Topic = "zz" }, `no topic "zz"`},
		{"stale id", func(s *snapshotV1) { s.Groups[0].Offsets[0].TopicID = "old" }, `with id "old"`},
		{"partition", func(s *snapshotV1) { s.Groups[0].Offsets[0].Partition = 5 }, "no partition a-5"},
		{"offset repeated", func(s *snapshotV1) { s.Groups[0].Offsets = append(s.Groups[0].Offsets, s.Groups[0].Offsets[0]) }, "repeated"},
		{"commit time", func(s *snapshotV1) { s.Groups[0].Offsets[0].CommitTimeMs = 99 }, "commit time 99"},
	} {
		s := img.toSnapshot()
		c.mutate(&s)
		_, err := UnmarshalSnapshot(0, encodeSnapshot(s))
		if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.msg) {
			t.Fatalf("%s: %v, want a corrupt snapshot saying %q", c.name, err, c.msg)
		}
	}
}

// TestWriteGroupFuzzSeeds keeps a GroupOffsetsCommitted entry and the
// version-4 image after it among the decoders' fuzz seeds (-rewrite writes
// them).
func TestWriteGroupFuzzSeeds(t *testing.T) {
	img := groupsImage(t)
	recs := mustDecide(t)(DecideCommitOffsets(img, CommitOffsetsEvent{Group: "billing", NowMs: 1700000000000,
		Offsets: []wire.GroupOffset{{Topic: "a", Partition: 1, Offset: 42, LeaderEpoch: 3, Metadata: "host-1"}}}))
	recs = append(recs, GroupDeleted{Group: "billing", Expired: true})
	entry, err := EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	checkSeedFiles(t, "seed-groups", entry, "seed-image-groups", mustApply(t, img, recs[:1]).MarshalSnapshot())
}
