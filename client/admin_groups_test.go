package client

import (
	"errors"
	"strings"
	"testing"

	"paymentlog/client/clienttest"
	"paymentlog/wire"
)

// Committed offsets come back as committed, sorted by topic and partition,
// with the topic's incarnation and the commit time; a later commit of a
// partition overwrites it and leaves the others; a topic filter and a group
// that does not exist give none, without an error.
func TestAdminCommitAndFetchOffsets(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	fc.CreateTopic("u", 1)
	a := mustFakeClient(t, fc).Admin()
	ctx := testCtx(t)
	err := a.CommitOffsets(ctx, "g", []wire.GroupOffset{
		{Topic: "u", Partition: 0, Offset: 9, LeaderEpoch: -1},
		{Topic: "t", Partition: 1, Offset: 7, LeaderEpoch: 2, Metadata: "host-a"},
		{Topic: "t", Partition: 0, Offset: 5, LeaderEpoch: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.CommitOffsets(ctx, "g", []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 6, LeaderEpoch: 1}}); err != nil {
		t.Fatal(err)
	}
	got, err := a.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		topic     string
		partition int32
		offset    int64
		epoch     int32
		metadata  string
	}{{"t", 0, 6, 1, ""}, {"t", 1, 7, 2, "host-a"}, {"u", 0, 9, -1, ""}}
	if len(got) != len(want) {
		t.Fatalf("fetched %+v", got)
	}
	for i, w := range want {
		o := got[i]
		if o.Topic != w.topic || o.Partition != w.partition || o.Offset != w.offset || o.LeaderEpoch != w.epoch ||
			o.Metadata != w.metadata || o.TopicID == "" || o.CommitTimeMs <= 0 {
			t.Fatalf("offset %d: %+v, want %+v with a topic id and a commit time", i, o, w)
		}
	}
	if got, err := a.FetchOffsets(ctx, "g", "u"); err != nil || len(got) != 1 || got[0].Topic != "u" {
		t.Fatalf("fetch of topic u: %+v, %v", got, err)
	}
	if got, err := a.FetchOffsets(ctx, "nobody"); err != nil || len(got) != 0 {
		t.Fatalf("fetch of a group that does not exist: %+v, %v; want none and no error", got, err)
	}
}

// ListGroups lists every group by name with its partition count; a deleted
// group is gone, and deleting it again is GroupIDNotFound.
func TestAdminListAndDeleteGroups(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 3)
	a := mustFakeClient(t, fc).Admin()
	ctx := testCtx(t)
	for _, g := range []string{"billing", "audit"} {
		offs := []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}
		if g == "billing" {
			offs = append(offs, wire.GroupOffset{Topic: "t", Partition: 2, Offset: 1, LeaderEpoch: -1})
		}
		if err := a.CommitOffsets(ctx, g, offs); err != nil {
			t.Fatal(err)
		}
	}
	groups, err := a.ListGroups(ctx)
	if err != nil || len(groups) != 2 || groups[0].Group != "audit" || groups[0].Partitions != 1 ||
		groups[1].Group != "billing" || groups[1].Partitions != 2 || groups[1].LastCommitMs <= 0 {
		t.Fatalf("list: %+v, %v", groups, err)
	}
	if err := a.DeleteGroup(ctx, "audit"); err != nil {
		t.Fatal(err)
	}
	if groups, err := a.ListGroups(ctx); err != nil || len(groups) != 1 || groups[0].Group != "billing" {
		t.Fatalf("list after delete: %+v, %v", groups, err)
	}
	err = a.DeleteGroup(ctx, "audit")
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.GroupIDNotFound {
		t.Fatalf("delete again: %v, want GroupIDNotFound", err)
	}
}

// A bad group name is InvalidGroupID on every request; a commit naming a
// partition that does not exist is refused whole.
func TestAdminGroupRefusals(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	a := mustFakeClient(t, fc).Admin()
	ctx := testCtx(t)
	off := []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}
	for _, bad := range []string{"", "a b", "..", strings.Repeat("g", wire.MaxGroupNameLen+1)} {
		if err := a.CommitOffsets(ctx, bad, off); ErrorCode(err) != wire.InvalidGroupID {
			t.Errorf("commit for group %q: %v, want InvalidGroupID", bad, err)
		}
		if _, err := a.FetchOffsets(ctx, bad); ErrorCode(err) != wire.InvalidGroupID {
			t.Errorf("fetch for group %q: %v, want InvalidGroupID", bad, err)
		}
		if err := a.DeleteGroup(ctx, bad); ErrorCode(err) != wire.InvalidGroupID {
			t.Errorf("delete of group %q: %v, want InvalidGroupID", bad, err)
		}
	}
	err := a.CommitOffsets(ctx, "g", append(off, wire.GroupOffset{Topic: "t", Partition: 1, Offset: 1, LeaderEpoch: -1}))
	if ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("commit of partition t/1 of a 1-partition topic: %v, want UnknownTopicOrPartition", err)
	}
	if got, _ := a.FetchOffsets(ctx, "g"); len(got) != 0 {
		t.Fatalf("a refused commit stored %+v", got)
	}
}

// DeleteGroup whose first attempt deleted the group and then answered
// NotController (the controller lost its role as the deletion committed)
// succeeds although the retry finds no group, as UnregisterBroker does.
func TestAdminDeleteGroupAfterNotControllerThatCommitted(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	if err := c.Admin().CommitOffsets(ctx, "g", []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 1, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	refused := refuseFirst(fc, wire.TypeDeleteGroup)
	if err := c.Admin().DeleteGroup(ctx, "g"); err != nil {
		t.Fatalf("DeleteGroup whose first attempt applied before a NotController answer: %v", err)
	}
	if !refused.Load() {
		t.Fatal("no answer was refused")
	}
	if fc.GroupOffsets("g") != nil {
		t.Fatal("group g still exists")
	}
}
