package controller

import (
	"strings"
	"testing"

	"paymentlog/node/membership"
	"paymentlog/wire"
)

// Group members through the controller: a join gets the partitions; while
// the group has members only a member commits (its own partitions) and
// the group cannot be deleted; describe and list show the member; a
// member silent for a session is forgotten at a tick; a controller that
// takes over knows no member, and in a group that has offsets gives a
// rejoining member only what it owns until a session has passed.
func TestGroupMembersThroughTheController(t *testing.T) {
	h := newHarness(t)
	partitionsUp(t, h, 1)
	ctx := h.ctx()
	join := func(owned ...int32) wire.GroupHeartbeatResponse {
		t.Helper()
		req := wire.GroupHeartbeatRequest{Group: "g", MemberID: "", Topics: []string{"t"}}
		if owned != nil {
			req.MemberID, req.Owned = "1.1.1", []wire.GroupPartitions{{Topic: "t", Partitions: owned}}
		}
		return h.c.GroupHeartbeat(ctx, req)
	}
	r := join()
	if r.Err != wire.None || !strings.HasPrefix(r.MemberID, "1.1.") || len(r.Assigned) != 1 || len(r.Assigned[0].Partitions) != 2 {
		t.Fatalf("join: %+v", r)
	}
	id := r.MemberID
	commit := func(member string, p int32) wire.ErrorCode {
		return h.c.CommitOffsets(ctx, wire.OffsetCommitRequest{Group: "g", MemberID: member,
			Offsets: []wire.GroupOffset{{Topic: "t", Partition: p, Offset: 5, LeaderEpoch: -1}}}).Err
	}
	if c := commit("", 0); c != wire.NonEmptyGroup {
		t.Fatalf("commit by no member: %v", c)
	}
	if c := commit("someone", 0); c != wire.UnknownMemberID {
		t.Fatalf("commit by an unknown member: %v", c)
	}
	if c := commit(id, 0); c != wire.None {
		t.Fatalf("commit by the member: %v", c)
	}
	if d := h.c.DeleteGroup(ctx, wire.DeleteGroupRequest{Group: "g"}); d.Err != wire.NonEmptyGroup {
		t.Fatalf("delete with a member: %+v", d)
	}
	if f := h.c.FetchOffsets(ctx, wire.OffsetFetchRequest{Group: "g", Members: true}); len(f.Members) != 1 || f.Members[0].MemberID != id {
		t.Fatalf("describe: %+v", f)
	}
	if l := h.c.ListGroups(ctx); len(l.Groups) != 1 || l.Groups[0].Members != 1 || l.Groups[0].Partitions != 1 {
		t.Fatalf("list: %+v", l)
	}

	// Silent for a session: forgotten at the next tick.
	h.clock.Advance(membership.DefaultSessionTimeout + 1)
	h.tick()
	if r := h.c.GroupHeartbeat(ctx, wire.GroupHeartbeatRequest{Group: "g", MemberID: id, MemberEpoch: r.MemberEpoch}); r.Err != wire.UnknownMemberID {
		t.Fatalf("heartbeat after the session: %+v", r)
	}
	if c := commit("", 1); c != wire.None {
		t.Fatalf("commit by no member once the group is empty: %v", c)
	}

	// Another controller; then this one again, knowing no member.
	h.raft.setLeader(2, 2)
	if r := join(); r.Err != wire.NotController || r.ControllerID != 2 {
		t.Fatalf("heartbeat at a follower: %+v", r)
	}
	h.raft.setLeader(1, 3)
	h.tick()
	if r := join(0); r.Err != wire.None || r.MemberID != "1.1.1" || len(r.Assigned) != 1 || len(r.Assigned[0].Partitions) != 1 {
		t.Fatalf("rejoin while settling: %+v", r)
	}
	h.clock.Advance(membership.DefaultSessionTimeout)
	if r := join(0); r.Err != wire.None || len(r.Assigned) != 1 || len(r.Assigned[0].Partitions) != 2 {
		t.Fatalf("rejoin once settled: %+v", r)
	}
}
