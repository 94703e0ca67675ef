package controller

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

// Group offsets through the controller: a commit is one record stamped
// with the controller's clock and read back from the active controller; a
// group unknown reads as no offsets; delete, list, and expiry after
// offsets.retention.ms (checked at most once per GroupExpiryInterval);
// reads answer NotController once this node no longer leads.
func TestGroupOffsetsThroughTheController(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	h.raft.takeCommitted()
	r := h.c.CommitOffsets(ctx, wire.OffsetCommitRequest{Group: "billing", Offsets: []wire.GroupOffset{
		{Topic: "t", Partition: 1, Offset: 42, LeaderEpoch: 0, Metadata: "m"}, {Topic: "t", Partition: 0, Offset: 7, LeaderEpoch: -1}}})
	if r.Err != wire.None || r.MetadataOffset != int64(h.store.Image().Offset()) {
		t.Fatalf("commit: %+v", r)
	}
	nowMs := h.clock.Now().UnixMilli()
	if got := h.raft.takeCommitted(); len(got) != 2 || !strings.HasPrefix(got[1], "GroupOffsetsCommitted billing ts=1000000 t-1=42@0 t-0=7") {
		t.Fatalf("committed %q", got)
	}
	f := h.c.FetchOffsets(ctx, wire.OffsetFetchRequest{Group: "billing"})
	tp, _ := h.store.Image().Topic("t")
	want := []wire.GroupOffset{
		{Topic: "t", TopicID: tp.ID, Partition: 0, Offset: 7, LeaderEpoch: -1, CommitTimeMs: nowMs},
		{Topic: "t", TopicID: tp.ID, Partition: 1, Offset: 42, LeaderEpoch: 0, Metadata: "m", CommitTimeMs: nowMs},
	}
	if f.Err != wire.None || !reflect.DeepEqual(f.Offsets, want) {
		t.Fatalf("fetch: %+v, want %+v", f, want)
	}
	if f := h.c.FetchOffsets(ctx, wire.OffsetFetchRequest{Group: "billing", Topics: []string{"other"}}); f.Err != wire.None || len(f.Offsets) != 0 {
		t.Fatalf("fetch of another topic: %+v", f)
	}
	if f := h.c.FetchOffsets(ctx, wire.OffsetFetchRequest{Group: "nobody"}); f.Err != wire.None || f.Offsets == nil || len(f.Offsets) != 0 {
		t.Fatalf("fetch of an unknown group: %+v", f)
	}
	if f := h.c.FetchOffsets(ctx, wire.OffsetFetchRequest{Group: "no/good"}); f.Err != wire.InvalidGroupID {
		t.Fatalf("fetch of a bad name: %+v", f)
	}
	if r := h.c.CommitOffsets(ctx, wire.OffsetCommitRequest{Group: "x", Offsets: []wire.GroupOffset{{Topic: "t", Partition: 2}}}); r.Err != wire.UnknownTopicOrPartition {
		t.Fatalf("commit to a missing partition: %+v", r)
	}
	h.clock.Advance(time.Second)
	if r := h.c.CommitOffsets(ctx, wire.OffsetCommitRequest{Group: "audit", Offsets: []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 1}}}); r.Err != wire.None {
		t.Fatalf("commit: %+v", r)
	}
	l := h.c.ListGroups(ctx)
	wantList := []wire.GroupSummary{{Group: "audit", Partitions: 1, LastCommitMs: nowMs + 1000}, {Group: "billing", Partitions: 2, LastCommitMs: nowMs}}
	if l.Err != wire.None || !reflect.DeepEqual(l.Groups, wantList) {
		t.Fatalf("list: %+v", l)
	}
	if d := h.c.DeleteGroup(ctx, wire.DeleteGroupRequest{Group: "audit"}); d.Err != wire.None {
		t.Fatalf("delete: %+v", d)
	}
	if d := h.c.DeleteGroup(ctx, wire.DeleteGroupRequest{Group: "audit"}); d.Err != wire.GroupIDNotFound {
		t.Fatalf("delete again: %+v", d)
	}

	// Expiry: with a retention of 5 s, billing (last commit 1 s ago)
	// expires once 5 s have passed since, at the first check after
	// GroupExpiryInterval.
	if r := h.c.AlterClusterConfigs(ctx, wire.AlterClusterConfigsRequest{Set: map[string]string{"offsets.retention.ms": "5000"}}); r.Err != wire.None {
		t.Fatalf("retention: %+v", r)
	}
	h.tick() // the first check of this tenure: nothing old enough
	if _, ok := h.store.Image().Group("billing"); !ok {
		t.Fatal("expired too soon")
	}
	h.clock.Advance(DefaultGroupExpiryInterval)
	h.tick()
	if _, ok := h.store.Image().Group("billing"); ok {
		t.Fatal("billing did not expire")
	}

	// A node that no longer leads answers reads with NotController.
	h.raft.setLeader(2, 2)
	if f := h.c.FetchOffsets(ctx, wire.OffsetFetchRequest{Group: "billing"}); f.Err != wire.NotController || f.ControllerID != 2 {
		t.Fatalf("fetch at a follower: %+v", f)
	}
	if l := h.c.ListGroups(ctx); l.Err != wire.NotController {
		t.Fatalf("list at a follower: %+v", l)
	}
}
