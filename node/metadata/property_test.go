package metadata

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"testing/quick"

	"paymentlog/wire"
)

// TestAssignReplicasProperties: distinct replicas on known brokers; preferred
// leaders spread evenly (counts differ by at most one).
func TestAssignReplicasProperties(t *testing.T) {
	f := func(nbRaw, rfRaw, nRaw uint8, seed uint64) bool {
		nb := 1 + int(nbRaw)%12
		rf := 1 + int(rfRaw)%nb
		n := 1 + int(nRaw)%100
		brokers := make([]int32, nb)
		for i := range brokers {
			brokers[i] = int32(10 + 3*i)
		}
		a := AssignReplicas(brokers, n, rf, seed)
		leaders := map[int32]int{}
		for _, reps := range a {
			if len(reps) != rf {
				return false
			}
			for i, r := range reps {
				if !slices.Contains(brokers, r) || slices.Contains(reps[:i], r) {
					return false
				}
			}
			leaders[reps[0]]++
		}
		lo, hi := n, 0
		for _, b := range brokers {
			lo, hi = min(lo, leaders[b]), max(hi, leaders[b])
		}
		return hi-lo <= 1
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 2000}); err != nil {
		t.Fatal(err)
	}
}

// TestFenceProperties: after a fence the broker leads nothing, is in no ISR
// except as a last member, leaders of other live brokers are kept, and the
// leader epoch moves exactly when the leader does.
func TestFenceProperties(t *testing.T) {
	f := func(seed uint64) bool {
		img, b, found := randomFenceTarget(t, rand.New(rand.NewPCG(seed, 1)))
		if !found {
			return true
		}
		id := b.ID
		next, _, err := img.ApplyEntry(img.Offset()+1, DecideFence(img, id, b.Incarnation))
		if err != nil {
			t.Logf("rejected: %v", err)
			return false
		}
		ok := true
		img.EachPartition(func(old PartitionState) bool {
			p, _ := next.Partition(old.Topic, old.Partition)
			switch {
			case p.Leader == id:
				t.Logf("%s still led by fenced %d", p, id)
				ok = false
			case p.InISR(id) && len(p.ISR) > 1:
				t.Logf("%s keeps fenced %d in a larger ISR", p, id)
				ok = false
			case old.Leader != id && old.Leader != NoLeader && p.Leader != old.Leader:
				t.Logf("%s lost leader %d though %d was fenced", p, old.Leader, id)
				ok = false
			case (p.Leader != old.Leader) != (p.LeaderEpoch != old.LeaderEpoch):
				t.Logf("%s leader epoch moved wrongly (was %s)", p, old)
				ok = false
			case old.Leader == id && p.Leader != NoLeader && !old.InISR(p.Leader) && !old.InELR(p.Leader):
				if tp, _ := img.Topic(p.Topic); !tp.UncleanLeaderElection() {
					t.Logf("%s: unclean election without the config (was %s)", p, old)
					ok = false
				}
			}
			return ok
		})
		return ok
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// TestFenceFavoringProperties: fencing with a random set of favored
// brokers gives the same records as without, except that a partition whose
// leader changes to a member of its new ISR may have another member of that
// ISR lead, a favored one, whenever the unfavored choice is not favored and
// a favored eligible member exists; ISRs, ELRs and epochs are the same.
func TestFenceFavoringProperties(t *testing.T) {
	f := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, 3))
		img, b, ok := randomFenceTarget(t, rng)
		if !ok {
			return true
		}
		id := b.ID
		favoredSet := map[int32]bool{}
		for _, x := range img.UnfencedBrokers() {
			favoredSet[x] = rng.IntN(2) == 0
		}
		favored := func(x int32) bool { return favoredSet[x] }
		plain := DecideFence(img, id, b.Incarnation)
		fav := DecideFenceFavoring(img, id, b.Incarnation, favored)
		if len(plain) != len(fav) {
			t.Logf("%d records with favor, %d without", len(fav), len(plain))
			return false
		}
		for i := range plain {
			pc, ok := plain[i].(PartitionChange)
			if !ok {
				if !reflect.DeepEqual(plain[i], fav[i]) {
					t.Logf("record %d: %v with favor, %v without", i, fav[i], plain[i])
					return false
				}
				continue
			}
			fc := fav[i].(PartitionChange)
			old, _ := img.Partition(pc.Topic, pc.Partition)
			same := fc
			same.Leader = pc.Leader
			if !reflect.DeepEqual(same, pc) {
				t.Logf("%s: %+v with favor, %+v without: more than the leader differs", old, fc, pc)
				return false
			}
			if fc.Leader == pc.Leader {
				if pc.Leader != old.Leader && pc.Leader != NoLeader && !favored(pc.Leader) && slices.Contains(pc.ISR, pc.Leader) {
					for _, r := range pc.ISR {
						if r != id && favored(r) && img.Live(r) {
							t.Logf("%s: new leader %d not favored though %d in its ISR is", old, pc.Leader, r)
							return false
						}
					}
				}
				continue
			}
			if old.Leader == pc.Leader || !slices.Contains(pc.ISR, fc.Leader) || !favored(fc.Leader) || favored(pc.Leader) {
				t.Logf("%s: leader %d with favor, %d without (was %d)", old, fc.Leader, pc.Leader, old.Leader)
				return false
			}
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// TestRandomWalkDeltas: over random decision sequences, every image keeps its
// invariants, each entry's delta equals Diff of the images around it, merged
// deltas equal the Diff over the whole walk, and snapshots round-trip.
func TestRandomWalkDeltas(t *testing.T) {
	f := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, 2))
		img := EmptyImage()
		start := img
		var merged Delta
		for i := 0; i < 80; i++ {
			recs := randomDecision(rng, img)
			if len(recs) == 0 {
				continue
			}
			next, d, err := img.ApplyEntry(img.Offset()+1, recs)
			if err != nil {
				t.Logf("decision rejected: %v", err)
				return false
			}
			checkInvariants(t, next)
			checkStructure(t, next)
			diff := Diff(img, next)
			diff.ControllerChanged = d.ControllerChanged
			if !deltaEqual(d, diff) {
				t.Logf("step %d: delta %+v != diff %+v", i, d, diff)
				return false
			}
			if !sameRefs(d.TopicsConfigChanged, diff.TopicsConfigChanged) {
				t.Logf("step %d: configs changed %v != diff %v", i, d.TopicsConfigChanged, diff.TopicsConfigChanged)
				return false
			}
			merged = merged.Merge(d)
			img = next
		}
		whole := Diff(start, img)
		whole.ControllerChanged = merged.ControllerChanged
		// Like topic configs, the cluster configs may have changed and
		// changed back; a merged delta never misses a difference.
		if whole.ClusterConfigsChanged && !merged.ClusterConfigsChanged {
			t.Logf("merged delta misses the cluster config change")
			return false
		}
		whole.ClusterConfigsChanged = merged.ClusterConfigsChanged
		// So may the ACL bindings.
		if whole.ACLsChanged && !merged.ACLsChanged {
			t.Logf("merged delta misses the ACL change")
			return false
		}
		whole.ACLsChanged = merged.ACLsChanged
		// And the client quotas.
		if whole.ClientQuotasChanged && !merged.ClientQuotasChanged {
			t.Logf("merged delta misses the client quota change")
			return false
		}
		whole.ClientQuotasChanged = merged.ClientQuotasChanged
		if !deltaEqual(merged, whole) {
			t.Logf("merged %+v != diff %+v", merged, whole)
			return false
		}
		// A merged delta may list a topic whose configs changed and changed
		// back; it never misses one that differs.
		for _, r := range whole.TopicsConfigChanged {
			if !slices.Contains(merged.TopicsConfigChanged, r) {
				t.Logf("merged delta misses the config change of %v", r)
				return false
			}
		}
		// Every field, not only the hash: the hash is computed from the
		// snapshot encoding, so a field the encoding left out would escape it.
		again, err := UnmarshalSnapshot(0, img.MarshalSnapshot())
		return err == nil && again.Hash() == img.Hash() && reflect.DeepEqual(again, img)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 200}); err != nil {
		t.Fatal(err)
	}
}

// randomWalk applies n random decisions from the empty image.
func randomWalk(t *testing.T, rng *rand.Rand, n int) *Image {
	img := EmptyImage()
	for range n {
		recs := randomDecision(rng, img)
		next, _, err := img.ApplyEntry(img.Offset()+1, recs)
		if err != nil {
			t.Fatalf("decision rejected: %v", err)
		}
		img = next
	}
	return img
}

// randomDecision draws one controller event and returns its records (nil
// when the decision refused it).
func randomDecision(rng *rand.Rand, img *Image) []Record {
	id := int32(1 + rng.IntN(5))
	b, known := img.Broker(id)
	var recs []Record
	var err error
	switch k := rng.IntN(16); {
	case k == 0 || !known:
		recs, err = DecideRegister(img, RegisterEvent{ID: id, Addr: fmt.Sprintf("h:%d", id), Incarnation: rng.Int64N(4), NewStorage: rng.IntN(3) == 0, UnsyncedLogs: rng.IntN(3) == 0,
			EmptyReplicas: randomEmptyReplicas(rng, img), MetadataVersion: randomVersion(rng)})
	case k <= 2:
		recs, err = DecideHeartbeat(img, HeartbeatEvent{ID: id, Incarnation: b.Incarnation,
			MetadataOffset: int64(img.Offset()), WantShutdown: rng.IntN(8) == 0})
	case k == 3:
		recs = DecideFence(img, id, b.Incarnation)
	case k == 4:
		var cfg map[string]string
		if rng.IntN(3) == 0 {
			cfg = map[string]string{ConfigUncleanLeaderElection: "true"}
		}
		recs, err = DecideCreateTopic(img, CreateTopicEvent{Name: fmt.Sprintf("t%d", rng.IntN(4)),
			ID: fmt.Sprint(rng.Uint64()), Partitions: int32(1 + rng.IntN(4)), RF: int32(1 + rng.IntN(3)),
			Configs: cfg, Seed: rng.Uint64()})
	case k == 5:
		recs, err = DecideDeleteTopic(img, fmt.Sprintf("t%d", rng.IntN(4)))
	case k <= 7:
		var parts []PartitionState
		img.EachPartition(func(p PartitionState) bool { parts = append(parts, p); return true })
		if len(parts) == 0 {
			return nil
		}
		p := parts[rng.IntN(len(parts))]
		if p.Leader == NoLeader {
			return nil
		}
		isr := []int32{p.Leader}
		for _, r := range p.Replicas {
			if r != p.Leader && rng.IntN(2) == 0 {
				isr = append(isr, r)
			}
		}
		lb, _ := img.Broker(p.Leader)
		var members []wire.ISRMember
		for _, r := range isr {
			b, _ := img.Broker(r)
			inc := b.Incarnation
			if rng.IntN(8) == 0 {
				inc-- // judged on an earlier process (KIP-903): refused if r is added
			}
			members = append(members, wire.ISRMember{BrokerID: r, Incarnation: inc})
		}
		recs, err = DecideAlterPartition(img, wire.AlterPartitionRequest{BrokerID: p.Leader, Incarnation: lb.Incarnation,
			Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
			NewISR: isr, Members: members})
	case k == 8:
		recs = DecidePreferredLeaders(img)
	case k == 9 && rng.IntN(3) == 0:
		recs, err = DecideUnregisterBroker(img, UnregisterBrokerEvent{ID: id})
	case k == 10 && rng.IntN(4) == 0:
		ev := AlterClusterConfigsEvent{Set: map[string]string{ConfigReassignmentThrottle: fmt.Sprint(rng.IntN(3) << 20)}}
		if rng.IntN(3) == 0 {
			ev = AlterClusterConfigsEvent{Delete: []string{ConfigReassignmentThrottle}}
		}
		recs, err = DecideAlterClusterConfigs(img, ev)
	case k == 10:
		recs, err = DecideAlterConfigs(img, randomConfigChange(rng, img))
	case k == 13:
		recs, err = randomGroupChange(rng, img)
	case k == 14:
		recs, err = randomACLChange(rng, img)
	case k == 15:
		recs, err = randomQuotaChange(rng, img)
	case k >= 11 && rng.IntN(4) == 0:
		recs, err = DecideReplicationFactor(img, ReplicationFactorEvent{Topic: fmt.Sprintf("t%d", rng.IntN(4)), RF: int32(1 + rng.IntN(4))})
	case k >= 11:
		recs, err = DecideReassign(img, randomReassign(rng, img))
	default:
		recs, err = DecideProducerIDs(img, id, 1+rng.Int64N(100))
	}
	if err != nil {
		return nil
	}
	return recs
}

// randomGroupChange commits offsets of up to three random partitions (some
// not existing, refused) for one of three groups, or deletes one.
func randomGroupChange(rng *rand.Rand, img *Image) ([]Record, error) {
	group := fmt.Sprintf("g%d", rng.IntN(3))
	if rng.IntN(5) == 0 {
		return DecideDeleteGroup(img, group)
	}
	var offs []wire.GroupOffset
	for range 1 + rng.IntN(3) {
		offs = append(offs, wire.GroupOffset{Topic: fmt.Sprintf("t%d", rng.IntN(4)), Partition: int32(rng.IntN(4)),
			Offset: rng.Int64N(1000), LeaderEpoch: int32(rng.IntN(3)) - 1})
	}
	return DecideCommitOffsets(img, CommitOffsetsEvent{Group: group, Offsets: offs, NowMs: int64(img.Offset())})
}

// randomACLChange creates one to three bindings drawn from a small pool
// (often existing already), or deletes those a random filter selects.
func randomACLChange(rng *rand.Rand, img *Image) ([]Record, error) {
	principals := []string{"User:a", "User:b", wire.WildcardPrincipal}
	names := []string{"t0", "t1", "t"}
	if rng.IntN(3) == 0 {
		f := wire.ACLFilter{Principal: principals[rng.IntN(3)]}
		if rng.IntN(2) == 0 {
			f = wire.ACLFilter{Name: names[rng.IntN(3)]}
		}
		recs, _, err := DecideDeleteACLs(img, []wire.ACLFilter{f})
		return recs, err
	}
	var bs []wire.ACLBinding
	for range 1 + rng.IntN(3) {
		b := wire.ACLBinding{Principal: principals[rng.IntN(3)], ResourceType: wire.ResourceTopic, PatternType: wire.PatternLiteral,
			Name: names[rng.IntN(3)], Operation: wire.OpRead, Permission: wire.PermissionAllow}
		if b.Name == "t" {
			b.PatternType = wire.PatternPrefixed
		}
		if rng.IntN(3) == 0 {
			b.Permission = wire.PermissionDeny
		}
		bs = append(bs, b)
	}
	recs, _, err := DecideCreateACLs(img, bs)
	return recs, err
}

// randomQuotaChange sets or deletes quota keys of one or two entities
// drawn from a small pool (the default among them; sometimes the same one
// twice, which is refused), often to the values they hold already.
func randomQuotaChange(rng *rand.Rand, img *Image) ([]Record, error) {
	principals := []string{"", "User:a", "User:b"}
	rates := []int64{wire.MinQuotaByteRate, 1 << 20, 8 << 20}
	var es []wire.QuotaEntry
	for range 1 + rng.IntN(2) {
		e := wire.QuotaEntry{Principal: principals[rng.IntN(len(principals))]}
		for _, k := range wire.QuotaKeys {
			switch rng.IntN(3) {
			case 0:
				if e.Set == nil {
					e.Set = map[string]int64{}
				}
				e.Set[k] = rates[rng.IntN(len(rates))]
			case 1:
				e.Delete = append(e.Delete, k)
			}
		}
		es = append(es, e)
	}
	return DecideAlterClientQuotas(img, es)
}

// randomReassign draws a reassignment of a random partition: a cancel, or a
// target of the topic's replication factor over brokers 1-5 (sometimes
// unregistered ones, which is refused).
func randomReassign(rng *rand.Rand, img *Image) ReassignEvent {
	var parts []PartitionState
	img.EachPartition(func(p PartitionState) bool { parts = append(parts, p); return true })
	if len(parts) == 0 {
		return ReassignEvent{Topic: "none"}
	}
	p := parts[rng.IntN(len(parts))]
	ev := ReassignEvent{Topic: p.Topic, Partition: p.Partition}
	if rng.IntN(4) == 0 {
		ev.Cancel = true
		return ev
	}
	t, _ := img.Topic(p.Topic)
	for _, i := range rng.Perm(5)[:min(int(t.RF), 5)] {
		ev.Target = append(ev.Target, int32(i+1))
	}
	return ev
}

// randomEmptyReplicas names each partition of img with probability 1/4 (a
// registration after its directory was wiped, RegisterEvent.EmptyReplicas).
func randomEmptyReplicas(rng *rand.Rand, img *Image) []wire.PartitionRef {
	var out []wire.PartitionRef
	img.EachPartition(func(p PartitionState) bool {
		if rng.IntN(4) == 0 {
			out = append(out, wire.PartitionRef{TopicID: p.TopicID, Partition: p.Partition})
		}
		return true
	})
	return out
}

// randomVersion is a registration's metadata version: mostly this build's,
// sometimes none (a build from before versions: refused once the cluster
// uses version 2, and holding version-2 changes back while registered).
func randomVersion(rng *rand.Rand) int32 {
	if rng.IntN(10) == 0 {
		return 0
	}
	return MetadataVersion
}

// randomFenceTarget walks to a random image and picks one of its unfenced
// brokers to fence; ok false when it has none.
func randomFenceTarget(t *testing.T, rng *rand.Rand) (*Image, BrokerState, bool) {
	img := randomWalk(t, rng, 60)
	live := img.UnfencedBrokers()
	if len(live) == 0 {
		return img, BrokerState{}, false
	}
	b, _ := img.Broker(live[rng.IntN(len(live))])
	return img, b, true
}
