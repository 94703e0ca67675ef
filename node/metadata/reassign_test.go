package metadata

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"paymentlog/wire"
)

// reassignFixture is brokers 1-4 up, topic payments (RF 3, min ISR 2, one
// partition) on brokers 1-3 led by 1, and an unclean-election topic "u"
// placed alike with min ISR 1 (so that no ELR forms and elections past the
// ISR are unclean).
func reassignFixture(t *testing.T) *Image {
	t.Helper()
	minISR := map[string]int32{"payments": 2, "u": 1}
	img := upImage(t, 3)
	for _, name := range []string{"payments", "u"} {
		var cfg map[string]string
		if name == "u" {
			cfg = map[string]string{ConfigUncleanLeaderElection: "true"}
		}
		img = mustApply(t, img, []Record{
			TopicCreated{Name: name, ID: name + "-id", Partitions: 1, RF: 3, MinISR: minISR[name], Configs: cfg},
			PartitionCreated{Topic: name, TopicID: name + "-id", Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
		})
	}
	img = mustApply(t, img, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1, MetadataVersion: MetadataVersion}})
	return mustApply(t, img, []Record{BrokerUnfenced{ID: 4, Incarnation: 1}})
}

// decide applies a decision's records to img: decide(t, img)(DecideX(img, ...)).
func decide(t *testing.T, img *Image) func([]Record, error) *Image {
	return func(recs []Record, err error) *Image {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return mustApply(t, img, recs)
	}
}

func part(t *testing.T, img *Image, topic string) PartitionState {
	t.Helper()
	p, ok := img.Partition(topic, 0)
	if !ok {
		t.Fatalf("%s-0 missing", topic)
	}
	return p
}

func wantPartition(t *testing.T, img *Image, topic, want string) PartitionState {
	t.Helper()
	p := part(t, img, topic)
	if got := p.String(); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	return p
}

// alterISR is the leader's AlterPartition to isr, every member on its
// registered incarnation.
func alterISR(t *testing.T, img *Image, topic string, isr ...int32) ([]Record, error) {
	t.Helper()
	p := part(t, img, topic)
	lb, _ := img.Broker(p.Leader)
	return DecideAlterPartition(img, wire.AlterPartitionRequest{BrokerID: p.Leader, Incarnation: lb.Incarnation,
		Topic: p.Topic, TopicID: p.TopicID, Partition: 0, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
		NewISR: isr, Members: members(t, img, isr, "")})
}

// Moving the leader's replica: the new replica is added and the old ones
// stay in sync until the new one joins the ISR; the AlterPartition that adds
// it completes the move in the same record, and leadership moves to the
// first target replica under the next leader epoch.
func TestReassignMovesTheLeaderReplica(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, 2, 3}}))
	wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3,1] isr=[2,3,1] leader=1 epoch=0 pepoch=1 adding=[4] removing=[1]")

	// The same target again (a retry) changes nothing.
	if recs, err := DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, 2, 3}}); err != nil || recs != nil {
		t.Fatalf("retry: %v %v", recs, err)
	}
	// An ISR change that leaves the new replica out does not complete it.
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2))
	wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3,1] isr=[2,1] leader=1 epoch=0 pepoch=2 adding=[4] removing=[1]")
	// 4 joins, but 3 (a target replica) is out of sync: still in progress.
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 4))
	p := wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3,1] isr=[4,2,1] leader=1 epoch=0 pepoch=3 adding=[4] removing=[1]")
	if !p.Reassigning() || !slices.Equal(p.Target(), []int32{4, 2, 3}) || !slices.Equal(p.Original(), []int32{2, 3, 1}) {
		t.Fatalf("target %v original %v", p.Target(), p.Original())
	}
	// 3 back: every target replica is in sync; 1 leaves, 4 leads.
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4))
	wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3] isr=[4,2,3] leader=4 epoch=1 pepoch=4")
	resp := AlterPartitionResponse(img, wire.AlterPartitionRequest{Topic: "payments", Partition: 0})
	if !slices.Equal(resp.ISR, []int32{4, 2, 3}) || resp.LeaderEpoch != 1 {
		t.Fatalf("answer to the completing AlterPartition: %+v", resp)
	}
}

// Moving a follower's replica keeps the leader; completing the move bumps
// its epoch, which fences the removed replica (settle).
func TestReassignFollowerKeepsTheLeader(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{1, 4, 3}}))
	wantPartition(t, img, "payments", "payments-0 replicas=[1,4,3,2] isr=[1,3,2] leader=1 epoch=0 pepoch=1 adding=[4] removing=[2]")
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4))
	wantPartition(t, img, "payments", "payments-0 replicas=[1,4,3] isr=[1,4,3] leader=1 epoch=1 pepoch=2")
}

// A replica removed and given back can fetch only in an epoch newer than
// any it held before its removal, whoever leads: a node that has not
// applied its removal yet is refused until it has (and has deleted its
// copy), instead of joining the ISR on a copy it is about to delete. The
// leader stays in both moves; only the removals bump the epoch.
func TestReassignRemovalFencesTheRemovedReplica(t *testing.T) {
	img := reassignFixture(t)
	held := part(t, img, "payments").LeaderEpoch // replica 3's last epoch
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{1, 2, 4}}))
	if p := part(t, img, "payments"); p.LeaderEpoch != held {
		t.Fatalf("starting the move (nothing removed yet) bumped the epoch: %s", p)
	}
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4)) // completes: 3 leaves
	wantPartition(t, img, "payments", fmt.Sprintf("payments-0 replicas=[1,2,4] isr=[1,2,4] leader=1 epoch=%d pepoch=2", held+1))
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{1, 2, 3}}))
	wantPartition(t, img, "payments", fmt.Sprintf("payments-0 replicas=[1,2,3,4] isr=[1,2,4] leader=1 epoch=%d pepoch=3 adding=[3] removing=[4]", held+1))
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 3, 4))
	wantPartition(t, img, "payments", fmt.Sprintf("payments-0 replicas=[1,2,3] isr=[1,2,3] leader=1 epoch=%d pepoch=4", held+2))
}

// A target that only reorders the replicas completes at once; the new first
// replica then gets leadership as the preferred replica.
func TestReassignReorderCompletesAtOnce(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{3, 1, 2}}))
	wantPartition(t, img, "payments", "payments-0 replicas=[3,1,2] isr=[3,1,2] leader=1 epoch=0 pepoch=1")
	img = mustApply(t, img, DecidePreferredLeaders(img))
	wantPartition(t, img, "payments", "payments-0 replicas=[3,1,2] isr=[3,1,2] leader=3 epoch=1 pepoch=2")
}

// Cancelling drops the added replica from the replicas and the ISR; when
// the added replica had become leader (as the preferred one), leadership
// moves to an original replica in sync.
func TestReassignCancel(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, 2, 3}}))
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 4)) // 3 lags: not complete
	img = mustApply(t, img, DecidePreferredLeaders(img))
	wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3,1] isr=[4,2,1] leader=4 epoch=1 pepoch=3 adding=[4] removing=[1]")
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Cancel: true}))
	wantPartition(t, img, "payments", "payments-0 replicas=[2,3,1] isr=[2,1] leader=2 epoch=2 pepoch=4")
	_, err := DecideReassign(img, ReassignEvent{Topic: "payments", Cancel: true})
	wantCode(t, err, wire.InvalidRequest, "no reassignment in progress")
}

// A new target replaces the one in progress; the original replicas stay
// those from before the first.
func TestReassignReplacesTheOneInProgress(t *testing.T) {
	img := reassignFixture(t)
	img = mustApply(t, img, []Record{BrokerRegistered{ID: 5, Addr: "127.0.0.1:7105", Incarnation: 1, MetadataVersion: MetadataVersion}})
	img = mustApply(t, img, []Record{BrokerUnfenced{ID: 5, Incarnation: 1}})
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, 2, 3}}))
	img = decide(t, img)(alterISR(t, img, "payments", 1, 2, 4)) // 3 lags
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{1, 5, 3}}))
	p := wantPartition(t, img, "payments", "payments-0 replicas=[1,5,3,2] isr=[1,2] leader=1 epoch=1 pepoch=3 adding=[5] removing=[2]")
	if !slices.Equal(p.Original(), []int32{1, 3, 2}) {
		t.Fatalf("original %v", p.Original())
	}
}

// Refusals name what is wrong; the image does not change.
func TestReassignRefusals(t *testing.T) {
	img := reassignFixture(t)
	for _, c := range []struct {
		ev   ReassignEvent
		code wire.ErrorCode
		msg  string
	}{
		{ReassignEvent{Topic: "nope", Target: []int32{1, 2, 3}}, wire.UnknownTopicOrPartition, "nope-0 does not exist"},
		{ReassignEvent{Topic: "payments", Partition: 1, Target: []int32{1, 2, 3}}, wire.UnknownTopicOrPartition, "payments-1 does not exist"},
		{ReassignEvent{Topic: "payments", Target: []int32{1, 2}}, wire.InvalidReplicationFactor, "2 replicas given; the topic's replication factor is 3"},
		{ReassignEvent{Topic: "payments", Target: []int32{1, 2, 2}}, wire.InvalidRequest, "broker 2 listed twice"},
		{ReassignEvent{Topic: "payments", Target: []int32{1, 2, 9}}, wire.InvalidRequest, "broker 9 is not registered"},
		{ReassignEvent{Topic: "payments", Cancel: true}, wire.InvalidRequest, "no reassignment in progress"},
	} {
		_, err := DecideReassign(img, c.ev)
		wantCode(t, err, c.code, c.msg)
	}
	if recs, err := DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{1, 2, 3}}); err != nil || recs != nil {
		t.Fatalf("the current replicas as the target: %v %v", recs, err)
	}
}

// Cancelling must not leave the partition without an in-sync replica: when
// only added replicas are in sync (the original ones were fenced out), the
// cancel is refused.
func TestReassignCancelKeepsAnInSyncReplica(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, 2, 3}}))
	img = decide(t, img)(alterISR(t, img, "payments", 1, 4)) // 2, 3 out of sync
	img = mustApply(t, img, DecidePreferredLeaders(img))     // 4 leads
	for _, id := range []int32{1} {
		img = mustApply(t, img, DecideFence(img, id, 1))
	}
	wantPartition(t, img, "payments", "payments-0 replicas=[4,2,3,1] isr=[4] leader=4 epoch=1 pepoch=4 elr=[1] adding=[4] removing=[1]")
	_, err := DecideReassign(img, ReassignEvent{Topic: "payments", Cancel: true})
	wantCode(t, err, wire.IneligibleReplica, "no in-sync replica would be left")
}

// An added replica is never elected unclean: it may hold no record yet.
func TestReassignAddedReplicaNotElectedUnclean(t *testing.T) {
	img := reassignFixture(t)
	img = decide(t, img)(DecideReassign(img, ReassignEvent{Topic: "u", Target: []int32{4, 2, 3}}))
	img = decide(t, img)(alterISR(t, img, "u", 1)) // only the leader in sync
	for _, id := range []int32{1, 2, 3} {
		b, _ := img.Broker(id)
		img = mustApply(t, img, DecideFence(img, id, b.Incarnation))
	}
	p := part(t, img, "u")
	if p.Leader != NoLeader {
		t.Fatalf("%s: elected though only added replica 4 is live", p)
	}
	// Once an original replica is back it is elected (unclean) and 4 is not.
	img = mustApply(t, img, []Record{BrokerUnfenced{ID: 3, Incarnation: 1}})
	img = mustApply(t, img, electOffline(img, img.Live))
	wantPartition(t, img, "u", fmt.Sprintf("u-0 replicas=[4,2,3,1] isr=[3] leader=3 epoch=%d pepoch=%d adding=[4] removing=[1]", p.LeaderEpoch+1, p.PartitionEpoch+1))
}

// A created partition may not carry a reassignment; the apply refuses
// inconsistent reassignment fields.
func TestReassignFieldsValidated(t *testing.T) {
	img := reassignFixture(t)
	p := part(t, img, "payments")
	bad := []PartitionChange{
		{Adding: []int32{5}},
		{Adding: []int32{2}, Removing: []int32{2}},
		{Removing: []int32{1, 2, 3}},
		{Adding: []int32{2, 2}},
	}
	for _, b := range bad {
		c := PartitionChange(p)
		c.PartitionEpoch++
		c.Adding, c.Removing = b.Adding, b.Removing
		if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{c}); err == nil {
			t.Fatalf("applied %v", PartitionState(c))
		}
	}
	cr := PartitionCreated{Topic: "payments", TopicID: "payments-id", Partition: 1, Replicas: []int32{1, 2, 3},
		ISR: []int32{1, 2, 3}, Leader: 1, Adding: []int32{3}}
	if _, _, err := img.ApplyEntry(img.Offset()+1, []Record{cr}); err == nil {
		t.Fatal("applied a created partition with a reassignment")
	}
}

// TestReassignRandomWalk: over random decision sequences that include
// reassignments, a new leader always comes from the previous ISR or ELR, or
// from the ISR of the AlterPartition completing a reassignment (or, with
// unclean election, is not a replica being added), a replica leaves the
// replica set only with a new leader epoch, a partition not being
// reassigned has exactly its topic's replication factor of replicas, and
// reassignments both start and complete.
func TestReassignRandomWalk(t *testing.T) {
	started, completed, rfChanges := 0, 0, 0
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		img := EmptyImage()
		rfChanged := map[string]bool{} // topics whose replication factor changed
		for range 120 {
			recs := randomDecision(rng, img)
			if len(recs) == 0 {
				continue
			}
			next, _, err := img.ApplyEntry(img.Offset()+1, recs)
			if err != nil {
				t.Fatalf("seed %d: decision rejected: %v", seed, err)
			}
			checkInvariants(t, next)
			for _, r := range recs {
				if c, ok := r.(TopicConfigChanged); ok && c.RF != 0 {
					rfChanged[c.Name] = true
					rfChanges++
				}
				if c, ok := r.(TopicCreated); ok {
					delete(rfChanged, c.Name)
				}
			}
			next.EachPartition(func(p PartitionState) bool {
				tp, _ := next.Topic(p.Topic)
				// A replica leaving the set is fenced (settle).
				if old, ok := img.Partition(p.Topic, p.Partition); ok && old.TopicID == p.TopicID &&
					len(minus(old.Replicas, p.Replicas)) > 0 && p.LeaderEpoch <= old.LeaderEpoch {
					t.Fatalf("seed %d: %s after %s: a replica left at the same leader epoch", seed, p, old)
				}
				// A partition has its topic's replication factor of
				// replicas unless a reassignment is under way or one
				// that changed the replication factor was cancelled;
				// never fewer than the min ISR.
				if !p.Reassigning() && len(p.Replicas) != int(tp.RF) && !rfChanged[p.Topic] {
					t.Fatalf("seed %d: %s: %d replicas, replication factor %d", seed, p, len(p.Replicas), tp.RF)
				}
				if min(len(p.Original()), len(p.Target())) < int(tp.MinISR) {
					t.Fatalf("seed %d: %s: fewer replicas than the min ISR %d", seed, p, tp.MinISR)
				}
				old, ok := img.Partition(p.Topic, p.Partition)
				if !ok || old.TopicID != p.TopicID {
					return true
				}
				if !old.Reassigning() && p.Reassigning() {
					started++
				}
				if old.Reassigning() && !p.Reassigning() && !slices.Equal(p.Replicas, old.Original()) {
					completed++
				}
				// A completing AlterPartition may hand leadership to a
				// replica it brings into the ISR: the leader judged it
				// caught up and counted it for the HW while the change
				// was pending.
				completing := old.Reassigning() && !p.Reassigning() && p.InISR(p.Leader)
				if p.Leader != old.Leader && p.Leader != NoLeader && !old.InISR(p.Leader) && !old.InELR(p.Leader) && !completing {
					if !tp.UncleanLeaderElection() || slices.Contains(old.Adding, p.Leader) {
						t.Fatalf("seed %d: %s elected from outside the ISR of %s", seed, p, old)
					}
				}
				return true
			})
			img = next
		}
	}
	if started < 50 || completed < 10 || rfChanges < 20 {
		t.Fatalf("walks started %d and completed %d reassignments and changed %d replication factors; want at least 50, 10 and 20",
			started, completed, rfChanges)
	}
	t.Logf("%d reassignments started, %d completed, %d replication factors changed", started, completed, rfChanges)
}

// reassignSeeds are the fuzz seeds of a reassignment: the entry starting
// one on seededImage's payments-0 (it applies there), and the snapshot of
// the image with it in progress.
func reassignSeeds(tb testing.TB) (entry, snapshot []byte) {
	tb.Helper()
	img := seededImage(tb)
	img, _, err := img.ApplyEntry(img.Offset()+1, []Record{BrokerRegistered{ID: 4, Addr: "127.0.0.1:7104", Incarnation: 1}})
	if err != nil {
		tb.Fatal(err)
	}
	p, _ := img.Partition("payments", 0)
	recs, err := DecideReassign(img, ReassignEvent{Topic: "payments", Target: []int32{4, p.Replicas[1], p.Replicas[2]}})
	if err != nil {
		tb.Fatal(err)
	}
	if entry, err = EncodeEntry(recs...); err != nil {
		tb.Fatal(err)
	}
	next, _, err := img.ApplyEntry(img.Offset()+1, recs)
	if err != nil {
		tb.Fatal(err)
	}
	return entry, next.MarshalSnapshot()
}

// TestWriteReassignFuzzSeeds keeps the reassignment seeds of
// FuzzDecodeEntry and FuzzUnmarshalSnapshot in sync (run with -rewrite).
func TestWriteReassignFuzzSeeds(t *testing.T) {
	entry, snap := reassignSeeds(t)
	checkSeedFiles(t, "seed-reassign", entry, "seed-image-reassigning", snap)
}
