package metadata

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/quick"

	"paymentlog/wire"
)

// TestDelayedAlterPartitionProperties: ISR changes are proposed by the
// leaders of the moment and delivered later, in any order, across fences,
// restarts, controlled shutdowns, elections and topics deleted and
// re-created under the same names (whose epochs start again at 0). Whatever
// arrives, an accepted change was proposed by the partition's current leader
// process, for the current topic incarnation, at the current epochs, and
// adds only live replicas judged on their registered incarnation. Every
// entry elects only from the ISR (the topics here never allow unclean
// election), bumps the leader epoch exactly when the leader changes, and
// leaves a restarted broker in no ISR it shares with others.
func TestDelayedAlterPartitionProperties(t *testing.T) {
	f := func(seed uint64) bool {
		rng := rand.New(rand.NewPCG(seed, 3))
		img := EmptyImage()
		var inFlight []wire.AlterPartitionRequest
		for step := 0; step < 200; step++ {
			var recs []Record
			switch k := rng.IntN(10); {
			case k < 3 && len(inFlight) > 0:
				i := rng.IntN(len(inFlight))
				req := inFlight[i]
				inFlight = slices.Delete(inFlight, i, i+1)
				var err error
				recs, err = DecideAlterPartition(img, req)
				if err == nil && len(recs) > 0 {
					if why := acceptedWrongly(img, req); why != "" {
						t.Logf("seed %d step %d: accepted %+v: %s", seed, step, req, why)
						return false
					}
				}
			case k < 6:
				if req, ok := proposeISRChange(rng, img); ok {
					inFlight = append(inFlight, req)
				}
				continue
			default:
				recs = randomDecisionFew(rng, img)
			}
			if len(recs) == 0 {
				continue
			}
			next, _, err := img.ApplyEntry(img.Offset()+1, recs)
			if err != nil {
				t.Logf("seed %d step %d: decision rejected: %v", seed, step, err)
				return false
			}
			checkInvariants(t, next)
			if why := badTransition(img, next); why != "" {
				t.Logf("seed %d step %d: %s", seed, step, why)
				return false
			}
			img = next
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 400}); err != nil {
		t.Fatal(err)
	}
}

// acceptedWrongly says why req should not have been accepted against img.
func acceptedWrongly(img *Image, req wire.AlterPartitionRequest) string {
	p, ok := img.Partition(req.Topic, req.Partition)
	lb, _ := img.Broker(req.BrokerID)
	switch {
	case !ok:
		return "no such partition"
	case req.TopicID != p.TopicID:
		return fmt.Sprintf("proposed for topic id %s, partition is of %s", req.TopicID, p.TopicID)
	case req.BrokerID != p.Leader || req.Incarnation != lb.Incarnation:
		return fmt.Sprintf("not from the leader process (leader %d inc %d)", p.Leader, lb.Incarnation)
	case req.LeaderEpoch != p.LeaderEpoch || req.PartitionEpoch != p.PartitionEpoch:
		return fmt.Sprintf("epochs %d/%d, partition at %d/%d", req.LeaderEpoch, req.PartitionEpoch, p.LeaderEpoch, p.PartitionEpoch)
	}
	for _, r := range req.NewISR {
		if p.InISR(r) {
			continue
		}
		b, _ := img.Broker(r)
		if !img.Live(r) || req.MemberIncarnation(r) != b.Incarnation {
			return fmt.Sprintf("adds %d (live %t, judged on %d, registered %d)", r, img.Live(r), req.MemberIncarnation(r), b.Incarnation)
		}
	}
	return ""
}

// proposeISRChange is what the leader of a random partition would propose
// now: a random ISR containing itself, each member with its incarnation
// as of now.
func proposeISRChange(rng *rand.Rand, img *Image) (wire.AlterPartitionRequest, bool) {
	var parts []PartitionState
	img.EachPartition(func(p PartitionState) bool { parts = append(parts, p); return true })
	if len(parts) == 0 {
		return wire.AlterPartitionRequest{}, false
	}
	p := parts[rng.IntN(len(parts))]
	if p.Leader == NoLeader {
		return wire.AlterPartitionRequest{}, false
	}
	isr := []int32{p.Leader}
	for _, r := range p.Replicas {
		if r != p.Leader && rng.IntN(2) == 0 {
			isr = append(isr, r)
		}
	}
	lb, _ := img.Broker(p.Leader)
	req := wire.AlterPartitionRequest{BrokerID: p.Leader, Incarnation: lb.Incarnation, Topic: p.Topic,
		TopicID: p.TopicID, Partition: p.Partition, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, NewISR: isr}
	for _, r := range isr {
		if r != p.Leader {
			b, _ := img.Broker(r)
			req.Members = append(req.Members, wire.ISRMember{BrokerID: r, Incarnation: b.Incarnation})
		}
	}
	return req, true
}

// randomDecisionFew is randomDecision over few topic names, brokers and
// partitions, so that re-created topics and repeated epochs are common, with
// incarnations that only grow.
func randomDecisionFew(rng *rand.Rand, img *Image) []Record {
	id := int32(1 + rng.IntN(3))
	b, known := img.Broker(id)
	var recs []Record
	var err error
	switch k := rng.IntN(9); {
	case k == 0 || !known:
		recs, err = DecideRegister(img, RegisterEvent{ID: id, Addr: fmt.Sprintf("h:%d", id), Incarnation: b.Incarnation + int64(rng.IntN(2)),
			NewStorage: rng.IntN(3) == 0, UnsyncedLogs: rng.IntN(3) == 0, EmptyReplicas: randomEmptyReplicas(rng, img)})
	case k <= 3:
		recs, err = DecideHeartbeat(img, HeartbeatEvent{ID: id, Incarnation: b.Incarnation,
			MetadataOffset: int64(img.Offset()), WantShutdown: rng.IntN(10) == 0})
	case k == 4:
		recs = DecideFence(img, id, b.Incarnation)
	case k == 5:
		recs, err = DecideCreateTopic(img, CreateTopicEvent{Name: fmt.Sprintf("t%d", rng.IntN(2)),
			ID: fmt.Sprint(rng.Uint64()), Partitions: int32(1 + rng.IntN(2)), RF: int32(1 + rng.IntN(3)), Seed: rng.Uint64()})
	case k == 6:
		recs, err = DecideDeleteTopic(img, fmt.Sprintf("t%d", rng.IntN(2)))
	case k == 7:
		recs = DecidePreferredLeaders(img)
	default:
		if req, ok := proposeISRChange(rng, img); ok {
			recs, err = DecideAlterPartition(img, req)
		}
	}
	if err != nil {
		return nil
	}
	return recs
}

// badTransition says what is wrong with the step from old to next.
func badTransition(old, next *Image) string {
	var why string
	next.EachPartition(func(p PartitionState) bool {
		o, ok := old.Partition(p.Topic, p.Partition)
		if !ok || o.TopicID != p.TopicID {
			return true // created in this step
		}
		switch {
		case p.Leader != o.Leader && p.Leader != NoLeader && !o.InISR(p.Leader) && !o.InELR(p.Leader):
			why = fmt.Sprintf("%s: leader %d elected from outside the ISR and ELR of %s", p, p.Leader, o)
		case (p.Leader != o.Leader) != (p.LeaderEpoch != o.LeaderEpoch):
			why = fmt.Sprintf("%s: leader epoch moved wrongly from %s", p, o)
		case p.LeaderEpoch < o.LeaderEpoch || p.PartitionEpoch < o.PartitionEpoch:
			why = fmt.Sprintf("%s: epochs went back from %s", p, o)
		}
		for _, r := range p.ISR {
			ob, _ := old.Broker(r)
			nb, _ := next.Broker(r)
			if len(p.ISR) > 1 && ob.Incarnation != nb.Incarnation {
				why = fmt.Sprintf("%s: broker %d restarted (incarnation %d -> %d) and stayed in the ISR", p, r, ob.Incarnation, nb.Incarnation)
			}
		}
		return why == ""
	})
	return why
}
