package membership

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

var t0 = time.Unix(1_700_000_000, 0)

func fixedTopics(counts map[string]int32) Partitions {
	return func(t string) (int32, bool) { n, ok := counts[t]; return n, ok }
}

// client is a well-behaved member: it owns what it was assigned, releases
// at once what it was not.
type client struct {
	id     string
	epoch  int32
	owned  []wire.GroupPartitions
	rejoin []string // its subscription, to join again with if forgotten (nil: fail instead)
}

func (cl *client) beat(t *testing.T, c *Coordinator, now time.Time, topics Partitions, subs ...string) wire.GroupHeartbeatResponse {
	t.Helper()
	req := &wire.GroupHeartbeatRequest{Group: "g", MemberID: cl.id, MemberEpoch: cl.epoch, Topics: subs, Owned: cl.owned}
	r := c.Heartbeat(now, req, topics, false)
	if r.Err == wire.UnknownMemberID && cl.rejoin != nil { // expired: join again with what it owns
		req.MemberEpoch, req.Topics = wire.JoinEpoch, cl.rejoin
		r = c.Heartbeat(now, req, topics, false)
	}
	if r.Err != wire.None {
		t.Fatalf("heartbeat of %q: %v %s", cl.id, r.Err, r.Message)
	}
	released := count(req.Owned) > 0 && cl.epoch != wire.LeaveEpoch && !covers(r.Assigned, req.Owned)
	cl.id, cl.epoch, cl.owned = r.MemberID, r.MemberEpoch, r.Assigned
	if released { // a member heartbeats again at once after releasing partitions
		return cl.beat(t, c, now, topics)
	}
	return r
}

// covers reports whether every partition of b is in a.
func covers(a, b []wire.GroupPartitions) bool {
	in := map[TopicPartition]bool{}
	for _, g := range a {
		for _, p := range g.Partitions {
			in[TopicPartition{g.Topic, p}] = true
		}
	}
	for _, g := range b {
		for _, p := range g.Partitions {
			if !in[TopicPartition{g.Topic, p}] {
				return false
			}
		}
	}
	return true
}

func count(gp []wire.GroupPartitions) int {
	n := 0
	for _, g := range gp {
		n += len(g.Partitions)
	}
	return n
}

// Two members split a topic evenly; a third takes its share only from
// partitions the others have released; a leave hands its partitions on.
func TestMembersShareATopic(t *testing.T) {
	c := New(Config{Prefix: "m-"}, t0)
	topics := fixedTopics(map[string]int32{"payments": 6})
	a, b, x := &client{}, &client{}, &client{}
	a.beat(t, c, t0, topics, "payments")
	if count(a.owned) != 6 {
		t.Fatalf("a alone: %v", a.owned)
	}
	b.beat(t, c, t0, topics, "payments")
	if count(b.owned) != 0 {
		t.Fatalf("b got partitions a still owns: %v", b.owned)
	}
	a.beat(t, c, t0, topics) // a is told to release 3
	if count(a.owned) != 3 {
		t.Fatalf("a after b joined: %v", a.owned)
	}
	b.beat(t, c, t0, topics)
	if count(b.owned) != 3 {
		t.Fatalf("b after a released: %v", b.owned)
	}
	x.beat(t, c, t0, topics, "payments")
	for range 3 {
		a.beat(t, c, t0, topics)
		b.beat(t, c, t0, topics)
		x.beat(t, c, t0, topics)
	}
	for _, m := range []*client{a, b, x} {
		if count(m.owned) != 2 {
			t.Fatalf("three members: a %v b %v x %v", a.owned, b.owned, x.owned)
		}
	}
	x.epoch = wire.LeaveEpoch
	x.beat(t, c, t0, topics)
	a.beat(t, c, t0, topics)
	b.beat(t, c, t0, topics)
	if count(a.owned)+count(b.owned) != 6 {
		t.Fatalf("after x left: a %v b %v", a.owned, b.owned)
	}
}

// A member that stops heartbeating is forgotten after a session; its
// partitions go to the others, and its commits are refused.
func TestSessionTimeout(t *testing.T) {
	c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second}, t0)
	topics := fixedTopics(map[string]int32{"payments": 2})
	a, b := &client{}, &client{}
	a.beat(t, c, t0, topics, "payments")
	b.beat(t, c, t0, topics, "payments")
	a.beat(t, c, t0, topics)
	b.beat(t, c, t0, topics)
	if count(a.owned) != 1 || count(b.owned) != 1 {
		t.Fatalf("a %v b %v", a.owned, b.owned)
	}
	mine := TopicPartition{"payments", a.owned[0].Partitions[0]}
	if e := c.CheckCommit("g", a.id, []TopicPartition{mine}); e != nil {
		t.Fatalf("a's own commit refused: %v", e)
	}
	theirs := TopicPartition{"payments", b.owned[0].Partitions[0]}
	if e := c.CheckCommit("g", a.id, []TopicPartition{theirs}); e == nil || e.Code != wire.InvalidRequest {
		t.Fatalf("a committing b's partition: %v", e)
	}
	now := t0.Add(6 * time.Second)
	b.beat(t, c, now, topics)
	if n, f := c.Expire(now.Add(5 * time.Second)); n != 1 || f != 0 {
		t.Fatalf("expired %d, want a", n)
	}
	if e := c.CheckCommit("g", a.id, []TopicPartition{mine}); e == nil || e.Code != wire.UnknownMemberID {
		t.Fatalf("expired a's commit: %v", e)
	}
	b.beat(t, c, now.Add(5*time.Second), topics)
	if count(b.owned) != 2 {
		t.Fatalf("b after a expired: %v", b.owned)
	}
	// a comes back: told it is unknown, it joins again reporting what it
	// had; b has those now, so a gets nothing until the next balance.
	req := &wire.GroupHeartbeatRequest{Group: "g", MemberID: a.id, MemberEpoch: a.epoch, Owned: a.owned}
	if r := c.Heartbeat(now.Add(6*time.Second), req, topics, false); r.Err != wire.UnknownMemberID {
		t.Fatalf("expired a's heartbeat: %v", r.Err)
	}
	a.epoch = wire.JoinEpoch
	a.beat(t, c, now.Add(6*time.Second), topics, "payments")
	if count(a.owned) != 0 {
		t.Fatalf("a rejoined with b's partitions: %v", a.owned)
	}
}

// A coordinator that just started (a controller that took over) lets a
// rejoining member keep what it owns but gives out nothing else in a group
// that existed, for one session, so that a member yet to rejoin cannot
// lose its partitions to another meanwhile. A new group starts at once.
func TestSettlingAfterTakeover(t *testing.T) {
	c := New(Config{Prefix: "n-", SessionTimeout: 10 * time.Second}, t0)
	topics := fixedTopics(map[string]int32{"payments": 4})
	owned := []wire.GroupPartitions{{Topic: "payments", Partitions: []int32{0, 1}}}
	r := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberID: "m-1", Topics: []string{"payments"}, Owned: owned}, topics, true)
	if r.Err != wire.None || r.MemberID != "m-1" || len(r.Assigned) != 1 || !slices.Equal(r.Assigned[0].Partitions, []int32{0, 1}) {
		t.Fatalf("rejoin while settling: %+v", r)
	}
	r = c.Heartbeat(t0.Add(11*time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: "m-1", MemberEpoch: r.MemberEpoch, Owned: owned}, topics, true)
	if count(r.Assigned) != 4 {
		t.Fatalf("after settling: %+v", r.Assigned)
	}
	r = c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "fresh", Topics: []string{"payments"}, Owned: []wire.GroupPartitions{}}, topics, false)
	if count(r.Assigned) != 4 {
		t.Fatalf("a group that never committed: %+v", r.Assigned)
	}
}

// Refusals, commits by no member, deletion of a group with members.
func TestRefusals(t *testing.T) {
	c := New(Config{}, t0)
	topics := fixedTopics(map[string]int32{"payments": 1})
	for _, tc := range []struct {
		req  wire.GroupHeartbeatRequest
		code wire.ErrorCode
	}{
		{wire.GroupHeartbeatRequest{Group: "", Topics: []string{"payments"}}, wire.InvalidGroupID},
		{wire.GroupHeartbeatRequest{Group: "g"}, wire.InvalidRequest},
		{wire.GroupHeartbeatRequest{Group: "g", Topics: []string{"b", "a"}}, wire.InvalidRequest},
		{wire.GroupHeartbeatRequest{Group: "g", MemberID: "nobody", MemberEpoch: 3}, wire.UnknownMemberID},
		{wire.GroupHeartbeatRequest{Group: "g", Topics: []string{"a"}, Owned: []wire.GroupPartitions{{Topic: "a", Partitions: []int32{2, 1}}}}, wire.InvalidRequest},
		{wire.GroupHeartbeatRequest{Group: "g", Topics: []string{"a"}, RebalanceTimeoutMs: -1}, wire.InvalidRequest},
	} {
		if r := c.Heartbeat(t0, &tc.req, topics, false); r.Err != tc.code {
			t.Errorf("%+v: %v %s, want %v", tc.req, r.Err, r.Message, tc.code)
		}
	}
	if c.CheckCommit("g", "", nil) != nil || c.CheckEmpty("g") != nil {
		t.Fatal("a group without members refuses")
	}
	r := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", Topics: []string{"payments"}}, topics, false)
	if e := c.CheckCommit("g", "", nil); e == nil || e.Code != wire.NonEmptyGroup {
		t.Fatalf("commit by no member: %v", e)
	}
	if e := c.CheckEmpty("g"); e == nil || e.Code != wire.NonEmptyGroup {
		t.Fatalf("delete: %v", e)
	}
	if d := c.Describe("g"); len(d) != 1 || d[0].MemberID != r.MemberID || count(d[0].Assigned) != 1 {
		t.Fatalf("describe: %+v", d)
	}
}

// Random walks: members join, leave, stall, change subscriptions, owning
// what they were given and releasing at once what they were not (or late);
// partitions grow. At every step no partition is in two members'
// assignments, nor assigned to one while another reports owning it; and
// once everyone heartbeats a few times with nothing changing, every
// partition of a subscribed topic is assigned and the split is even.
func TestRandomWalk(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		counts := map[string]int32{"a": 3, "b": 5, "c": 1}
		topics := fixedTopics(counts)
		c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second}, t0)
		now := t0
		var members []*client
		subs := map[*client][]string{}
		check := func(step string) {
			t.Helper()
			owner := map[TopicPartition]string{}
			for _, m := range c.Describe("g") {
				for _, gp := range m.Assigned {
					for _, p := range gp.Partitions {
						tp := TopicPartition{gp.Topic, p}
						if o, ok := owner[tp]; ok {
							t.Fatalf("seed %d %s: %v assigned to %s and %s", seed, step, tp, o, m.MemberID)
						}
						owner[tp] = m.MemberID
					}
				}
			}
			for _, m := range c.Describe("g") {
				for _, gp := range m.Owned {
					for _, p := range gp.Partitions {
						tp := TopicPartition{gp.Topic, p}
						if o, ok := owner[tp]; ok && o != m.MemberID {
							t.Fatalf("seed %d %s: %v assigned to %s while %s owns it", seed, step, tp, o, m.MemberID)
						}
					}
				}
			}
		}
		for step := range 150 {
			now = now.Add(time.Duration(rng.IntN(800)) * time.Millisecond)
			switch k := rng.IntN(10); {
			case k == 0 && len(members) < 5:
				s := [][]string{{"a"}, {"a", "b"}, {"b", "c"}, {"a", "b", "c"}}[rng.IntN(4)]
				m := &client{rejoin: s}
				m.beat(t, c, now, topics, s...)
				members = append(members, m)
				subs[m] = s
			case k == 1 && len(members) > 0:
				i := rng.IntN(len(members))
				members[i].epoch = wire.LeaveEpoch
				members[i].beat(t, c, now, topics)
				members = slices.Delete(members, i, i+1)
			case k == 2:
				counts["b"]++
			default:
				if len(members) > 0 {
					m := members[rng.IntN(len(members))]
					m.beat(t, c, now, topics)
				}
			}
			if _, f := c.Expire(now); f != 0 { // every member releases at its next heartbeat
				t.Fatalf("seed %d step %d: %d members fenced", seed, step, f)
			}
			check(fmt.Sprintf("step %d", step))
		}
		for range 6 { // quiet: everyone heartbeats
			for _, m := range members {
				m.beat(t, c, now, topics)
			}
		}
		check("quiet")
		if len(members) == 0 {
			continue
		}
		assigned := 0
		for _, m := range members {
			assigned += count(m.owned)
		}
		want := 0
		for name, n := range counts {
			for _, m := range members {
				if slices.Contains(subs[m], name) {
					want += int(n)
					break
				}
			}
		}
		if assigned != want {
			t.Fatalf("seed %d: %d partitions assigned when quiet, want %d", seed, assigned, want)
		}
	}
}

// A member that stops releasing (its application stopped polling, its
// heartbeats go on) holds the partitions another member waits for only
// until its rebalance timeout: then it is fenced, the other gets them, and
// the fenced member's heartbeats and commits are told so until it joins
// again owning nothing.
func TestRebalanceTimeoutFencesAStalledMember(t *testing.T) {
	topics := fixedTopics(map[string]int32{"payments": 4})
	c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second}, t0)
	stalled := func(now time.Time, id string, owned []wire.GroupPartitions) wire.GroupHeartbeatResponse {
		return c.Heartbeat(now, &wire.GroupHeartbeatRequest{Group: "g", MemberID: id, MemberEpoch: 2, Owned: owned}, topics, false)
	}
	r := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, Topics: []string{"payments"},
		RebalanceTimeoutMs: 30_000}, topics, false)
	a, all := r.MemberID, r.Assigned
	if count(all) != 4 {
		t.Fatalf("a alone: %v", all)
	}
	b := &client{}
	b.beat(t, c, t0.Add(time.Second), topics, "payments")
	// a is answered without b's half and keeps reporting all four.
	if r := stalled(t0.Add(time.Second), a, all); count(r.Assigned) != 2 || r.Err != wire.None {
		t.Fatalf("a told to release: %v %v", r.Assigned, r.Err)
	}
	for now := t0.Add(2 * time.Second); now.Before(t0.Add(31 * time.Second)); now = now.Add(5 * time.Second) {
		stalled(now, a, all)
		b.beat(t, c, now, topics)
		if _, f := c.Expire(now); f != 0 || count(b.owned) != 0 {
			t.Fatalf("at %v (inside a's rebalance timeout): fenced %d, b owns %v", now.Sub(t0), f, b.owned)
		}
	}
	now := t0.Add(31*time.Second + time.Millisecond)
	if n, f := c.Expire(now); n != 0 || f != 1 {
		t.Fatalf("past a's rebalance timeout: expired %d fenced %d, want a fenced", n, f)
	}
	if r := stalled(now, a, all); r.Err != wire.FencedMemberEpoch {
		t.Fatalf("fenced a's heartbeat: %v %s", r.Err, r.Message)
	}
	mine := TopicPartition{"payments", all[0].Partitions[0]}
	if e := c.CheckCommit("g", a, []TopicPartition{mine}); e == nil || e.Code != wire.FencedMemberEpoch {
		t.Fatalf("fenced a's commit: %v", e)
	}
	if got := c.Describe("g"); len(got) != 1 || got[0].MemberID != b.id {
		t.Fatalf("members after the fencing: %+v", got)
	}
	b.beat(t, c, now, topics)
	if count(b.owned) != 4 {
		t.Fatalf("b after a was fenced: %v", b.owned)
	}
	// A session timeout later the controller has forgotten the fencing.
	later := now.Add(11 * time.Second)
	b.beat(t, c, later, topics)
	c.Expire(later)
	if r := stalled(later, a, all); r.Err != wire.UnknownMemberID {
		t.Fatalf("a heartbeating a session after its fencing: %v", r.Err)
	}
	// a joins again owning nothing and gets its share once b releases it.
	ac := &client{id: a}
	ac.beat(t, c, later, topics, "payments")
	b.beat(t, c, later, topics)
	ac.beat(t, c, later, topics)
	if count(ac.owned) != 2 || count(b.owned) != 2 {
		t.Fatalf("after a joined again: a %v b %v", ac.owned, b.owned)
	}
}

// A member that releases within its rebalance timeout is not fenced, and
// the timeout starts again at its next release.
func TestRebalanceTimeoutRestartsAtEachRelease(t *testing.T) {
	topics := fixedTopics(map[string]int32{"payments": 6})
	c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second}, t0)
	r := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, Topics: []string{"payments"},
		RebalanceTimeoutMs: 3_000}, topics, false)
	a, all := r.MemberID, r.Assigned
	b := &client{}
	b.beat(t, c, t0, topics, "payments")
	r = c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberID: a, MemberEpoch: 2, Owned: all}, topics, false)
	kept := r.Assigned
	// Released after 2 s, inside the timeout.
	c.Heartbeat(t0.Add(2*time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: a, MemberEpoch: 2, Owned: kept}, topics, false)
	b.beat(t, c, t0.Add(2*time.Second), topics)
	if _, f := c.Expire(t0.Add(4 * time.Second)); f != 0 {
		t.Fatalf("a released in time and was fenced")
	}
	// A third member: a is told to release again at 5 s; 3 s from then,
	// not from its first release, it is fenced.
	third := &client{}
	third.beat(t, c, t0.Add(5*time.Second), topics, "payments")
	b.beat(t, c, t0.Add(5*time.Second), topics)
	r = c.Heartbeat(t0.Add(5*time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: a, MemberEpoch: 2, Owned: kept}, topics, false)
	if covers(r.Assigned, kept) {
		t.Fatalf("a not told to release with a third member: kept %v assigned %v", kept, r.Assigned)
	}
	c.Heartbeat(t0.Add(7*time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: a, MemberEpoch: 2, Owned: kept}, topics, false)
	if _, f := c.Expire(t0.Add(7 * time.Second)); f != 0 {
		t.Fatalf("a fenced 2 s into its second release")
	}
	if _, f := c.Expire(t0.Add(8*time.Second + time.Millisecond)); f != 1 {
		t.Fatalf("a not fenced 3 s into its second release")
	}
}

// A static member that leaves with StaticLeaveEpoch keeps its partitions
// for a session timeout: the other member does not get them, and the next
// join with the same instance id takes its place (a new member id, the
// same partitions), the old id fenced. One that does not come back within
// the session is forgotten, and the other takes everything.
func TestStaticMemberRestartKeepsItsPartitions(t *testing.T) {
	topics := fixedTopics(map[string]int32{"payments": 4})
	c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second}, t0)
	join := func(now time.Time, instance string, owned []wire.GroupPartitions) wire.GroupHeartbeatResponse {
		return c.Heartbeat(now, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, Topics: []string{"payments"},
			InstanceID: instance, Owned: owned}, topics, false)
	}
	beat := func(now time.Time, r wire.GroupHeartbeatResponse) wire.GroupHeartbeatResponse {
		return c.Heartbeat(now, &wire.GroupHeartbeatRequest{Group: "g", MemberID: r.MemberID, MemberEpoch: r.MemberEpoch, Owned: r.Assigned}, topics, false)
	}
	a := join(t0, "pay-0", nil)
	b := &client{}
	b.beat(t, c, t0, topics, "payments")
	a = beat(t0, a) // told to release b's half
	a = beat(t0, a) // released
	b.beat(t, c, t0, topics)
	if count(a.Assigned) != 2 || count(b.owned) != 2 {
		t.Fatalf("split: a %v b %v", a.Assigned, b.owned)
	}
	aParts := a.Assigned
	// a restarts: it leaves for a while.
	if r := c.Heartbeat(t0.Add(time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: a.MemberID, MemberEpoch: wire.StaticLeaveEpoch},
		topics, false); r.Err != wire.None || r.MemberEpoch != wire.StaticLeaveEpoch {
		t.Fatalf("static leave: %+v", r)
	}
	if d := c.Describe("g"); len(d) != 2 || !slices.ContainsFunc(d, func(m wire.GroupMember) bool { return m.Departed && m.InstanceID == "pay-0" }) {
		t.Fatalf("describe after the static leave: %+v", d)
	}
	for now := t0.Add(time.Second); now.Before(t0.Add(9 * time.Second)); now = now.Add(time.Second) {
		b.beat(t, c, now, topics)
		if count(b.owned) != 2 {
			t.Fatalf("b took a's partitions while a's instance was away: %v", b.owned)
		}
		c.Expire(now)
	}
	if e := c.CheckCommit("g", a.MemberID, []TopicPartition{{"payments", aParts[0].Partitions[0]}}); e == nil {
		t.Fatal("the departed member's commit was accepted")
	}
	if e := c.CheckEmpty("g"); e == nil || e.Code != wire.NonEmptyGroup || !strings.Contains(e.Message, "1 of them static members that left") {
		t.Fatalf("deleting the group while a's instance is away: %v", e)
	}
	a2 := join(t0.Add(9*time.Second), "pay-0", nil)
	if a2.Err != wire.None || a2.MemberID == a.MemberID || !slices.EqualFunc(a2.Assigned, aParts, func(x, y wire.GroupPartitions) bool {
		return x.Topic == y.Topic && slices.Equal(x.Partitions, y.Partitions)
	}) {
		t.Fatalf("a's instance back: %+v; want a new id and %v", a2, aParts)
	}
	if r := beat(t0.Add(9*time.Second), a); r.Err != wire.FencedMemberEpoch {
		t.Fatalf("the old member id's heartbeat: %v", r.Err)
	}
	// Its instance is held again: another process with it is refused.
	if r := join(t0.Add(9*time.Second), "pay-0", nil); r.Err != wire.UnreleasedInstanceID {
		t.Fatalf("a second process with a's instance: %v %s", r.Err, r.Message)
	}
	// Away for longer than a session: forgotten, b takes all.
	a2 = beat(t0.Add(10*time.Second), a2)
	c.Heartbeat(t0.Add(10*time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: a2.MemberID, MemberEpoch: wire.StaticLeaveEpoch}, topics, false)
	later := t0.Add(21 * time.Second)
	b.beat(t, c, later, topics)
	if n, _ := c.Expire(later); n != 1 {
		t.Fatalf("expired %d, want a's departed instance", n)
	}
	b.beat(t, c, later, topics)
	if count(b.owned) != 4 {
		t.Fatalf("b after a's instance stayed away: %v", b.owned)
	}
	// Its instance joins again, anew.
	if r := join(later, "pay-0", nil); r.Err != wire.None || count(r.Assigned) != 0 {
		t.Fatalf("a's instance after its session: %+v", r)
	}
}

// A static member that leaves with LeaveEpoch is gone at once, and a
// dynamic member's StaticLeaveEpoch is a plain leave.
func TestStaticMemberLeavingForGood(t *testing.T) {
	topics := fixedTopics(map[string]int32{"payments": 2})
	c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second}, t0)
	a := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, Topics: []string{"payments"}, InstanceID: "pay-0"}, topics, false)
	d := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, Topics: []string{"payments"}}, topics, false)
	c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberID: a.MemberID, MemberEpoch: wire.LeaveEpoch}, topics, false)
	c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberID: d.MemberID, MemberEpoch: wire.StaticLeaveEpoch}, topics, false)
	if n := c.Count("g"); n != 0 {
		t.Fatalf("%d members left", n)
	}
	if r := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, Topics: []string{"payments"}, InstanceID: "pay-0"}, topics, false); r.Err != wire.None || count(r.Assigned) != 2 {
		t.Fatalf("a's instance joining again: %+v", r)
	}
}

// A member subscribing with a topic pattern reads every topic whose whole
// name matches, including one created later (picked up at its next
// heartbeat); a pattern that would break out of its anchors is refused.
func TestTopicPatternSubscription(t *testing.T) {
	counts := map[string]int32{"payments-eu": 2, "payments-us": 1, "refunds": 1, "xpayments-eu": 1}
	names := func() []string { return slices.Sorted(maps.Keys(counts)) }
	topics := fixedTopics(counts)
	c := New(Config{Prefix: "m-", SessionTimeout: 10 * time.Second, TopicNames: names}, t0)
	r := c.Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, TopicPattern: "payments-.*"}, topics, false)
	if r.Err != wire.None || count(r.Assigned) != 3 || len(r.Assigned) != 2 {
		t.Fatalf("pattern join: %v %s %v", r.Err, r.Message, r.Assigned)
	}
	counts["payments-ap"] = 2
	r = c.Heartbeat(t0.Add(time.Second), &wire.GroupHeartbeatRequest{Group: "g", MemberID: r.MemberID, MemberEpoch: r.MemberEpoch, Owned: r.Assigned}, topics, false)
	if count(r.Assigned) != 5 || r.Assigned[0].Topic != "payments-ap" {
		t.Fatalf("after payments-ap was created: %v", r.Assigned)
	}
	if d := c.Describe("g"); len(d) != 1 || d[0].TopicPattern != "payments-.*" || !slices.Equal(d[0].Topics, []string{"payments-ap", "payments-eu", "payments-us"}) {
		t.Fatalf("describe: %+v", d)
	}
	for _, bad := range []wire.GroupHeartbeatRequest{
		{Group: "g", MemberEpoch: wire.JoinEpoch, TopicPattern: "refunds)|(payments-eu"},
		{Group: "g", MemberEpoch: wire.JoinEpoch, TopicPattern: "payments-.*", Topics: []string{"refunds"}},
		{Group: "g", MemberEpoch: wire.JoinEpoch, TopicPattern: "("},
	} {
		if r := c.Heartbeat(t0, &bad, topics, false); r.Err != wire.InvalidRequest {
			t.Errorf("%+v: %v, want InvalidRequest", bad, r.Err)
		}
	}
	if r := New(Config{}, t0).Heartbeat(t0, &wire.GroupHeartbeatRequest{Group: "g", MemberEpoch: wire.JoinEpoch, TopicPattern: "p.*"}, topics, false); r.Err != wire.InvalidRequest {
		t.Errorf("a pattern where no topic names are known: %v", r.Err)
	}
}
