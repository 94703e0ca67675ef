package client

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// groupCluster is a fake cluster with topic t of 4 partitions and the given
// group session timeout (heartbeats every 20 ms), and a client of it.
func groupCluster(tb testing.TB, session time.Duration) (*clienttest.Cluster, *Client) {
	tb.Helper()
	fc := clienttest.New(3)
	fc.SetGroupTimeouts(session, 20*time.Millisecond)
	fc.CreateTopic("t", 4)
	return fc, mustFakeClient(tb, fc)
}

// A member alone reads every partition; a second one that joins takes half
// of them, each handed over only after the first released it, starting at
// the first's commit: every record is read exactly once, and no partition
// by both at once.
func TestGroupConsumersSplitATopic(t *testing.T) {
	_, c := groupCluster(t, 20*time.Second)
	r := newGroupRun(t, c)
	produceEach(t, c, 4, 10)
	a := r.start("a", GroupConsumerConfig{})
	waitFor(t, "a read the 40 records", func() bool { return r.total() == 40 })
	if !a.g.Stable() || len(a.g.Assignment()) != 4 {
		t.Fatalf("a alone reads %v", a.g.Assignment())
	}
	produceEach(t, c, 4, 10) // read by a, or by b once handed over
	b := r.start("b", GroupConsumerConfig{})
	waitFor(t, "a and b split the partitions 2 and 2", split(2, a, b))
	produceEach(t, c, 4, 10)
	waitFor(t, "120 records read", func() bool { return r.total() >= 120 })
	r.check()
	for p := range int32(4) {
		tp := TopicPartition{"t", p}
		if got := r.offsets(tp); !slices.Equal(got, seq(0, 30)) {
			t.Fatalf("%s: read offsets %v; want 0 to 29 once each, in order", tp, got)
		}
	}
	if both := append(a.g.Assignment(), b.g.Assignment()...); len(slices.CompactFunc(slices.SortedFunc(slices.Values(both), comparePartitions),
		func(x, y TopicPartition) bool { return x == y })) != 4 {
		t.Fatalf("a reads %v, b %v", a.g.Assignment(), b.g.Assignment())
	}
	if a.g.MemberID() == b.g.MemberID() || a.g.MemberID() == "" {
		t.Fatalf("member ids %q and %q", a.g.MemberID(), b.g.MemberID())
	}
}

// A member that closes commits and leaves: the other takes its partitions
// at once (long before the session timeout) and starts at its commits. What
// the closing member commits is what CommitAt says it processed, so the
// other reads again exactly the records it did not: none lost, the
// uncommitted ones twice.
func TestGroupConsumerCloseHandsPartitionsOver(t *testing.T) {
	fc, c := groupCluster(t, time.Minute)
	r := newGroupRun(t, c)
	a := r.start("a", GroupConsumerConfig{})
	waitFor(t, "a reads 4 partitions", split(4, a))
	processedUpTo := func(_ TopicPartition, pos int64) (int64, bool) { return min(pos, 7), true }
	b := r.start("b", GroupConsumerConfig{CommitAt: processedUpTo})
	waitFor(t, "a and b split the partitions", split(2, a, b))
	bs := b.g.Assignment()
	produceEach(t, c, 4, 10)
	waitFor(t, "40 records read", func() bool { return r.total() == 40 })
	b.close(t)
	if offs := fc.GroupOffsets("g"); len(offs) < 2 {
		t.Fatalf("committed %+v after b closed", offs)
	}
	for _, o := range fc.GroupOffsets("g") {
		if slices.Contains(bs, TopicPartition{o.Topic, o.Partition}) && o.Offset != 7 {
			t.Fatalf("b committed %+v; want 7 (CommitAt)", o)
		}
	}
	waitFor(t, "a reads the 4 partitions again", split(4, a))
	waitFor(t, "a read b's uncommitted records", func() bool { return r.total() == 46 })
	r.check()
	for p := range int32(4) {
		tp := TopicPartition{"t", p}
		want := seq(0, 10)
		if slices.Contains(bs, tp) {
			want = append(want, 7, 8, 9) // committed at 7 by b
		}
		if got := r.offsets(tp); !slices.Equal(got, want) {
			t.Fatalf("%s: read %v; want %v", tp, got, want)
		}
	}
	if ms := fc.GroupMembers("g"); len(ms) != 1 || ms[0].MemberID != a.g.MemberID() || ms[0].ClientID != "a" {
		t.Fatalf("members after b left: %+v", ms)
	}
	a.close(t)
	for _, o := range fc.GroupOffsets("g") {
		if o.Offset != 10 {
			t.Fatalf("after a closed: %+v; want every partition committed at 10", fc.GroupOffsets("g"))
		}
	}
	if ms := fc.GroupMembers("g"); len(ms) != 0 {
		t.Fatalf("members after both left: %+v", ms)
	}
}

// heartbeatLog records the heartbeats the fake cluster receives and drops
// those of one member while told to.
type heartbeatLog struct {
	mu      sync.Mutex
	reqs    []wire.GroupHeartbeatRequest
	commits []wire.OffsetCommitRequest
	drop    string // member id whose heartbeats are lost
	fence   string // member id whose next heartbeat is answered FencedMemberEpoch
	refuse  bool   // answer every commit InvalidRequest
}

func recordHeartbeats(fc *clienttest.Cluster) *heartbeatLog {
	l := &heartbeatLog{}
	fc.SetIntercept(func(_ string, t quic.FrameType, req any) clienttest.Action {
		l.mu.Lock()
		defer l.mu.Unlock()
		switch t {
		case wire.TypeGroupHeartbeat:
			hb := *req.(*wire.GroupHeartbeatRequest)
			l.reqs = append(l.reqs, hb)
			if l.drop != "" && hb.MemberID == l.drop {
				return clienttest.Action{Kind: clienttest.DropRequest}
			}
			if l.fence != "" && hb.MemberID == l.fence {
				l.fence = ""
				return clienttest.Action{Kind: clienttest.Refuse, Code: wire.FencedMemberEpoch}
			}
		case wire.TypeOffsetCommit:
			l.commits = append(l.commits, *req.(*wire.OffsetCommitRequest))
			if l.refuse {
				return clienttest.Action{Kind: clienttest.Refuse, Code: wire.InvalidRequest}
			}
		}
		return clienttest.Action{}
	})
	return l
}

// refuseCommits makes every commit refused (InvalidRequest), or (false)
// accepted again.
func (l *heartbeatLog) refuseCommits(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refuse = on
}

// fenceNext answers member's next heartbeat FencedMemberEpoch.
func (l *heartbeatLog) fenceNext(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fence = member
}

func (l *heartbeatLog) dropFrom(member string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.drop = member
}

// since returns the heartbeats and commits received from the i-th on.
func (l *heartbeatLog) since(hb, commits int) ([]wire.GroupHeartbeatRequest, []wire.OffsetCommitRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs[hb:]), slices.Clone(l.commits[commits:])
}

func (l *heartbeatLog) counts() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs), len(l.commits)
}

// A controller that takes over knows no member: the member's next
// heartbeat is answered UnknownMemberID, and it joins again at once under
// the same id, reporting the partitions it owns, which it keeps: nothing is
// released, nothing read twice, though it had committed nothing since.
func TestGroupConsumerRejoinKeepsOwnedPartitions(t *testing.T) {
	fc, c := groupCluster(t, 2*time.Second)
	hbs := recordHeartbeats(fc)
	r := newGroupRun(t, c)
	produceEach(t, c, 4, 5)
	a := r.start("a", GroupConsumerConfig{})
	waitFor(t, "a read the 20 records", func() bool { return r.total() == 20 })
	if offs := fc.GroupOffsets("g"); offs != nil {
		t.Fatalf("committed %+v before any commit", offs)
	}
	// The group exists before the new controller: it must keep what it
	// had for a session, so a member gets only what it reports owning.
	if err := c.Admin().commitOffsetsAs(testCtx(t), "g", a.g.MemberID(), []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 0, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	produceEach(t, c, 4, 5)
	waitFor(t, "a read the next 20", func() bool { return r.total() == 40 })
	id := a.g.MemberID()
	from, _ := hbs.counts()
	fc.ForgetMembers()
	waitFor(t, "a is a member again", func() bool {
		ms := fc.GroupMembers("g")
		return len(ms) == 1 && len(ms[0].Assigned) == 1 && len(ms[0].Assigned[0].Partitions) == 4
	})
	if ms := fc.GroupMembers("g"); ms[0].MemberID != id {
		t.Fatalf("a joined again as %q; want its id %q", ms[0].MemberID, id)
	}
	reqs, _ := hbs.since(from, 0)
	i := slices.IndexFunc(reqs, func(h wire.GroupHeartbeatRequest) bool { return h.MemberEpoch == wire.JoinEpoch })
	if i < 0 || reqs[i].MemberID != id || !slices.Equal(reqs[i].Topics, []string{"t"}) || len(reqs[i].Owned) != 1 ||
		!slices.Equal(reqs[i].Owned[0].Partitions, []int32{0, 1, 2, 3}) {
		t.Fatalf("heartbeats after the takeover: %+v; want a join with a's id owning its 4 partitions", reqs)
	}
	produceEach(t, c, 4, 5)
	waitFor(t, "a read the last 20", func() bool { return r.total() == 60 })
	r.check()
	if rv := r.revokedFrom("a"); len(rv) > 0 {
		t.Fatalf("a released %v", rv)
	}
	for p := range int32(4) {
		if got := r.offsets(TopicPartition{"t", p}); !slices.Equal(got, seq(0, 15)) {
			t.Fatalf("partition %d: read %v; want 0 to 14 once", p, got)
		}
	}
}

// A member none of whose heartbeats is answered for a session timeout
// releases its partitions without committing (the group gives them to the
// other member) and joins again under its id once the controller answers;
// the partitions are shared again and no record is lost.
func TestGroupConsumerLapsedMembershipReleasesWithoutCommitting(t *testing.T) {
	const session = time.Second
	fc, c := groupCluster(t, session)
	hbs := recordHeartbeats(fc)
	r := newGroupRun(t, c)
	a, b := r.twoMembers(c, GroupConsumerConfig{})
	id, had, before := a.g.MemberID(), a.g.Assignment(), len(r.revokedFrom("a"))
	_, commitsFrom := hbs.counts()
	hbs.dropFrom(id)
	waitFor(t, "a released its partitions", func() bool { return len(r.revokedFrom("a")) == before+2 })
	if rv := r.revokedFrom("a")[before:]; !slices.Equal(rv, had) {
		t.Fatalf("a released %v; had %v", rv, had)
	}
	waitFor(t, "b reads all 4", split(4, b))
	produceEach(t, c, 4, 5)
	hbs.dropFrom("")
	waitFor(t, "a and b split the partitions again", split(2, a, b))
	if a.g.MemberID() != id {
		t.Fatalf("a joined again as %q; want %q", a.g.MemberID(), id)
	}
	_, commits := hbs.since(0, commitsFrom)
	for _, cm := range commits {
		if cm.MemberID == id {
			t.Fatalf("a committed %+v after its heartbeats were lost", cm)
		}
	}
	produceEach(t, c, 4, 5)
	waitFor(t, "every record read", r.readEach(4, 15))
}

// While a group has members only they commit its offsets (each its own
// partitions) and it cannot be deleted; once they left, anyone may again.
func TestGroupCommitsWhileItHasMembers(t *testing.T) {
	fc, c := groupCluster(t, time.Minute)
	ctx := testCtx(t)
	r := newGroupRun(t, c)
	a := r.start("a", GroupConsumerConfig{})
	waitFor(t, "a reads 4 partitions", split(4, a))
	off := []wire.GroupOffset{{Topic: "t", Partition: 0, Offset: 0, LeaderEpoch: -1}}
	if err := c.Admin().CommitOffsets(ctx, "g", off); ErrorCode(err) != wire.NonEmptyGroup {
		t.Fatalf("commit by no member: %v; want NonEmptyGroup", err)
	}
	cs := c.NewConsumer(ConsumerConfig{})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, 0)
	if err := cs.CommitOffsets(ctx, "g", map[TopicPartition]int64{{"t", 0}: 0}); ErrorCode(err) != wire.NonEmptyGroup {
		t.Fatalf("commit by a consumer that is no member: %v; want NonEmptyGroup", err)
	}
	if err := c.Admin().commitOffsetsAs(ctx, "g", "nobody", off); ErrorCode(err) != wire.UnknownMemberID {
		t.Fatalf("commit by an unknown member: %v; want UnknownMemberID", err)
	}
	if err := c.Admin().commitOffsetsAs(ctx, "g", a.g.MemberID(), off); err != nil {
		t.Fatalf("commit by the member: %v", err)
	}
	if err := c.Admin().DeleteGroup(ctx, "g"); ErrorCode(err) != wire.NonEmptyGroup {
		t.Fatalf("delete with a member: %v; want NonEmptyGroup", err)
	}
	d, err := c.Admin().DescribeGroup(ctx, "g")
	if err != nil || len(d.Offsets) != 1 || len(d.Members) != 1 || d.Members[0].MemberID != a.g.MemberID() {
		t.Fatalf("describe: %+v, %v", d, err)
	}
	groups, err := c.Admin().ListGroups(ctx)
	if err != nil || len(groups) != 1 || groups[0].Members != 1 {
		t.Fatalf("list: %+v, %v", groups, err)
	}
	a.close(t)
	if err := c.Admin().CommitOffsets(ctx, "g", off); err != nil {
		t.Fatalf("commit by no member once the member left: %v", err)
	}
	if err := c.Admin().DeleteGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if fc.GroupOffsets("g") != nil {
		t.Fatal("group not deleted")
	}
}

// A bad configuration is refused before anything is sent, naming the field.
func TestGroupConsumerConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg   GroupConsumerConfig
		field string
	}{
		{GroupConsumerConfig{Topics: []string{"t"}}, "Group"},
		{GroupConsumerConfig{Group: "a b", Topics: []string{"t"}}, "Group"},
		{GroupConsumerConfig{Group: "g"}, "Topics"},
		{GroupConsumerConfig{Group: "g", Topics: []string{"t", "b/ad"}}, "Topics"},
		{GroupConsumerConfig{Group: "g", Topics: []string{"t"}, From: -7}, "From"},
		{GroupConsumerConfig{Group: "g", Topics: []string{"t"}, TopicPattern: "t.*"}, "TopicPattern"},
		{GroupConsumerConfig{Group: "g", TopicPattern: "a)|(b"}, "TopicPattern"},
		{GroupConsumerConfig{Group: "g", Topics: []string{"t"}, InstanceID: "a b"}, "InstanceID"},
		{GroupConsumerConfig{Group: "g", Topics: []string{"t"}, MaxPollInterval: -time.Second}, "MaxPollInterval"},
	} {
		var ce *ConfigError
		if err := c.cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field {
			t.Errorf("%+v: %v; want a *ConfigError on %s", c.cfg, err, c.field)
		}
	}
}

// A member whose application stops polling leaves the group once
// MaxPollInterval has passed, though its heartbeats could go on: the other
// member takes its partitions at the last commit and reads on. When the
// application polls again, its member releases what it held without
// committing (the commit is refused meanwhile) and joins again.
func TestGroupConsumerThatStopsPollingLeaves(t *testing.T) {
	fc, c := groupCluster(t, 20*time.Second) // the session is not what ends it
	hbs := recordHeartbeats(fc)
	r := newGroupRun(t, c)
	a, b := r.twoMembers(c, GroupConsumerConfig{MaxPollInterval: 2 * time.Second})
	id, had, revoked := a.g.MemberID(), a.g.Assignment(), len(r.revokedFrom("a"))
	hbFrom, commitsFrom := hbs.counts()
	a.hold.Lock() // a's application stalls
	stalled := true
	defer func() {
		if stalled {
			a.hold.Unlock()
		}
	}()
	waitFor(t, "b reads all 4 (a left)", split(4, b))
	hb, _ := hbs.since(hbFrom, 0)
	if !slices.ContainsFunc(hb, func(h wire.GroupHeartbeatRequest) bool {
		return h.MemberID == id && h.MemberEpoch == wire.LeaveEpoch
	}) {
		t.Fatalf("b has a's partitions and a sent no leave: %+v", hb)
	}
	if err := a.g.Commit(testCtx(t)); !errors.Is(err, ErrMembershipLost) {
		t.Fatalf("a's commit after it left: %v, want ErrMembershipLost", err)
	}
	produceEach(t, c, 4, 5) // b reads a's two partitions on from a's last commit
	a.hold.Unlock()
	stalled = false
	waitFor(t, "a and b split the partitions again", split(2, a, b))
	if a.g.MemberID() != id {
		t.Fatalf("a joined again as %q; want %q", a.g.MemberID(), id)
	}
	if rv := r.revokedFrom("a")[revoked:]; !slices.Equal(rv[:len(had)], had) {
		t.Fatalf("a released %v when it polled again; had %v", rv, had)
	}
	_, commits := hbs.since(0, commitsFrom)
	for _, cm := range commits {
		if cm.MemberID == id {
			t.Fatalf("a committed %+v after it left", cm)
		}
	}
	waitFor(t, "every record read", r.readEach(4, 10))
}

// A member the controller fences (it kept partitions past its rebalance
// timeout) releases everything without committing and joins again owning
// nothing, with its rebalance timeout: it gets its share back once the
// controller gives it.
func TestGroupConsumerFencedReleasesAndJoinsAgain(t *testing.T) {
	fc, c := groupCluster(t, 20*time.Second)
	hbs := recordHeartbeats(fc)
	r := newGroupRun(t, c)
	a, b := r.twoMembers(c, GroupConsumerConfig{MaxPollInterval: 7 * time.Second})
	id, had, revoked := a.g.MemberID(), a.g.Assignment(), len(r.revokedFrom("a"))
	hbFrom, commitsFrom := hbs.counts()
	hbs.fenceNext(id)
	waitFor(t, "a released its partitions", func() bool { return len(r.revokedFrom("a")) >= revoked+len(had) })
	if rv := r.revokedFrom("a")[revoked:]; !slices.Equal(rv[:len(had)], had) {
		t.Fatalf("a released %v; had %v", rv, had)
	}
	waitFor(t, "a and b split the partitions again", split(2, a, b))
	hb, commits := hbs.since(hbFrom, commitsFrom)
	joined := slices.IndexFunc(hb, func(h wire.GroupHeartbeatRequest) bool {
		return h.MemberID == id && h.MemberEpoch == wire.JoinEpoch
	})
	if joined < 0 || len(hb[joined].Owned) != 0 || hb[joined].RebalanceTimeoutMs != 7000 || len(hb[joined].Topics) != 1 {
		t.Fatalf("a's heartbeats after the fencing: %+v; want a join owning nothing, rebalance timeout 7000 ms", hb)
	}
	for _, cm := range commits {
		if cm.MemberID == id && slices.ContainsFunc(cm.Offsets, func(o wire.GroupOffset) bool {
			return slices.Contains(had, TopicPartition{o.Topic, o.Partition})
		}) {
			t.Fatalf("a committed %+v for partitions it lost", cm)
		}
	}
	r.check()
}

// A static member (InstanceID) that closes and comes back as a new process
// with the same InstanceID gets its partitions back at its commits; the
// other member never gets them meanwhile, and nothing is read twice. A
// second process with the InstanceID while it runs waits, and gives up
// with UnreleasedInstanceID when its ctx ends.
func TestGroupConsumerStaticRestartKeepsItsPartitions(t *testing.T) {
	fc, c := groupCluster(t, 20*time.Second)
	hbs := recordHeartbeats(fc)
	r := newGroupRun(t, c)
	a, b := r.twoMembers(c, GroupConsumerConfig{InstanceID: "pay-a"})
	had, bHad, bID := a.g.Assignment(), b.g.Assignment(), b.g.MemberID()
	a.close(t)
	ms := fc.GroupMembers("g")
	if !slices.ContainsFunc(ms, func(m wire.GroupMember) bool { return m.InstanceID == "pay-a" && m.Departed }) {
		t.Fatalf("members after a closed: %+v; want a's instance departed", ms)
	}
	// b heartbeats three times meanwhile: a dynamic member's partitions
	// would be b's by then.
	from, _ := hbs.counts()
	waitFor(t, "three heartbeats of b", func() bool {
		hb, _ := hbs.since(from, 0)
		n := 0
		for _, h := range hb {
			if h.MemberID == bID {
				n++
			}
		}
		return n >= 3
	})
	if got := b.g.Assignment(); !slices.Equal(got, bHad) {
		t.Fatalf("b reads %v after a's instance left for a while; it had %v", got, bHad)
	}
	produceEach(t, c, 4, 5)
	a2 := r.start("a2", GroupConsumerConfig{InstanceID: "pay-a"})
	waitFor(t, "a2 and b split the partitions", split(2, a2, b))
	if got := a2.g.Assignment(); !slices.Equal(got, had) {
		t.Fatalf("a2 (a's instance) reads %v; a had %v", got, had)
	}
	if got := b.g.Assignment(); !slices.Equal(got, bHad) || len(r.revokedFrom("b")) != 0 {
		t.Fatalf("b reads %v and released %v; it had %v", got, r.revokedFrom("b"), bHad)
	}
	waitFor(t, "40 records read", func() bool { return r.total() >= 40 })
	r.check()
	for p := range int32(4) {
		if got := r.offsets(TopicPartition{"t", p}); !slices.Equal(got, seq(0, 10)) {
			t.Fatalf("partition %d: read %v; want 0 to 9 once each", p, got)
		}
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	if g, err := c.NewGroupConsumer(ctx, GroupConsumerConfig{Group: "g", Topics: []string{"t"}, InstanceID: "pay-a"}); ErrorCode(err) != wire.UnreleasedInstanceID {
		if g != nil {
			g.Close(testCtx(t))
		}
		t.Fatalf("a third process with a's instance: %v, want UnreleasedInstanceID", err)
	}
}

// A member whose commit of the partitions it releases fails releases them
// all the same and says so through OnCommitError (the CLI prints it).
func TestGroupConsumerReportsAFailedReleaseCommit(t *testing.T) {
	fc, c := groupCluster(t, 20*time.Second)
	hbs := recordHeartbeats(fc)
	r := newGroupRun(t, c)
	var mu sync.Mutex
	var failed []TopicPartition
	var ferr error
	a := r.start("a", GroupConsumerConfig{OnCommitError: func(tps []TopicPartition, err error) {
		mu.Lock()
		defer mu.Unlock()
		failed, ferr = append(failed, tps...), err
	}})
	waitFor(t, "a reads all 4", split(4, a))
	produceEach(t, c, 4, 5)
	waitFor(t, "20 records read", func() bool { return r.total() == 20 })
	hbs.refuseCommits(true)
	b := r.start("b", GroupConsumerConfig{})
	waitFor(t, "a and b split the partitions", split(2, a, b))
	hbs.refuseCommits(false) // the members' commits as they close
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(failed, r.revokedFrom("a")) || len(failed) != 2 || ErrorCode(ferr) != wire.InvalidRequest {
		t.Fatalf("OnCommitError got %v (%v); a released %v", failed, ferr, r.revokedFrom("a"))
	}
}

// A member subscribed with a topic pattern reads every matching topic,
// and a topic created later once the controller resolves the pattern again
// (its next heartbeat); a topic that does not match is not read.
func TestGroupConsumerTopicPattern(t *testing.T) {
	fc, c := groupCluster(t, 20*time.Second)
	fc.CreateTopic("pay-eu", 2)
	fc.CreateTopic("xpay-eu", 1)
	ctx := testCtx(t)
	read := map[string]int{}
	g, err := c.NewGroupConsumer(ctx, GroupConsumerConfig{Group: "g", TopicPattern: "pay-.*", From: SeekBeginning,
		Consumer: ConsumerConfig{MaxWait: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	produceValues(t, c, "pay-eu", 0, "a", "b")
	produceValues(t, c, "pay-eu", 1, "c")
	produceValues(t, c, "xpay-eu", 0, "no")
	produceValues(t, c, "t", 0, "no")
	poll := func() {
		msgs, err := g.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			read[m.Topic]++
		}
	}
	waitFor(t, "pay-eu's 3 records read", func() bool { poll(); return read["pay-eu"] == 3 })
	fc.CreateTopic("pay-us", 1)
	produceValues(t, c, "pay-us", 0, "d", "e")
	waitFor(t, "pay-us's 2 records read", func() bool { poll(); return read["pay-us"] == 2 })
	if read["xpay-eu"] != 0 || read["t"] != 0 || len(g.Assignment()) != 3 {
		t.Fatalf("read %v, assigned %v", read, g.Assignment())
	}
}

// A commit right after a controller took over (it knows no member, and the
// member's next heartbeat is a second away) is refused UnknownMemberID;
// Commit then wakes the heartbeat, which joins again owning the member's
// partitions, and commits again as that member: the offsets land and
// Commit returns nil (before, it returned the refusal, and Close after a
// controller failover lost the final commit).
func TestGroupConsumerCommitsAcrossAControllerChange(t *testing.T) {
	fc := clienttest.New(3)
	fc.SetGroupTimeouts(20*time.Second, time.Second)
	fc.CreateTopic("t", 4)
	c := mustFakeClient(t, fc)
	produceEach(t, c, 4, 5)
	ctx := testCtx(t)
	g, err := c.NewGroupConsumer(ctx, GroupConsumerConfig{Group: "g", Topics: []string{"t"}, From: SeekBeginning,
		Consumer: ConsumerConfig{MaxWait: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	for read := 0; read < 20; {
		msgs, err := g.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read += len(msgs)
	}
	id := g.MemberID()
	fc.ForgetMembers()
	if err := g.Commit(ctx); err != nil {
		t.Fatalf("commit after the controller change: %v", err)
	}
	offs := fc.GroupOffsets("g")
	if len(offs) != 4 {
		t.Fatalf("committed %+v, want 4 partitions at 5", offs)
	}
	for _, o := range offs {
		if o.Offset != 5 {
			t.Fatalf("committed %+v, want 4 partitions at 5", offs)
		}
	}
	if ms := fc.GroupMembers("g"); len(ms) != 1 || ms[0].MemberID != id {
		t.Fatalf("members %+v, want %s alone", ms, id)
	}
}
