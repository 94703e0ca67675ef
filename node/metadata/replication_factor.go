package metadata

import (
	"cmp"
	"slices"

	"paymentlog/wire"
)

// Changing a topic's replication factor (what Kafka operators do with
// kafka-reassign-partitions and a plan that lists more or fewer replicas):
// one entry holds a TopicConfigChanged with the new RF, so that partitions
// added later get it, and one reassignment per partition whose target does
// not have that many replicas. Raising it adds replicas that copy the log
// from the leader and join the ISR when caught up, as any reassignment's
// do; the partition keeps its replicas in sync meanwhile. Lowering it
// removes replicas at once when the ones kept are all in sync (every
// acknowledged record is on each of them), else when they are.
//
// The replicas added are live brokers outside the partition's target, each
// time one that a reassignment in progress is removing (it holds a copy),
// else the one holding the fewest of the topic's replicas, then the fewest
// of all replicas in the cluster, then the lowest id; they go to the end
// of the preference order, so preferred leaders do not move. The replicas removed
// are, in this order: those whose broker is not live, those out of the ISR,
// then the last in preference order; never the leader.

// ReplicationFactorEvent asks that Topic's replication factor become RF.
type ReplicationFactorEvent struct {
	Topic string
	RF    int32
	// Assignment, when set, names every partition's new replicas (index:
	// partition; each RF distinct registered brokers, the first the
	// preferred leader), as a reassignment plan does, instead of letting
	// the decision pick the replicas added and dropped.
	Assignment [][]int32
}

// DecideReplicationFactor sets a topic's replication factor and reassigns
// every partition whose target (see PartitionState.Target) has another size,
// replacing a reassignment in progress (the original replicas stay those
// before it). Refused: an unknown topic (UnknownTopicOrPartition); an RF
// outside [1, MaxReplicas], below the topic's min ISR, or above the number
// of live brokers when a partition needs more (InvalidReplicationFactor); a
// partition that has no in-sync replica or no live one to lead
// (IneligibleReplica). When the topic already has that RF and every target
// that size, there are no records (a retry of a committed change). With an
// Assignment, each partition's target becomes the one it names (refused
// unless it names every partition, each with RF distinct registered
// brokers), so no replica is added only to be moved again.
func DecideReplicationFactor(img *Image, ev ReplicationFactorEvent) ([]Record, error) {
	t, ok := img.Topic(ev.Topic)
	if !ok {
		return nil, werr(wire.UnknownTopicOrPartition, "topic %q does not exist", ev.Topic)
	}
	switch {
	case ev.RF < 1 || ev.RF > MaxReplicas:
		return nil, werr(wire.InvalidReplicationFactor, "replication factor %d: must be 1-%d", ev.RF, MaxReplicas)
	case ev.RF < t.MinISR:
		return nil, werr(wire.InvalidReplicationFactor, "replication factor %d is below topic %q's min.insync.replicas %d: lower that first",
			ev.RF, t.Name, t.MinISR)
	}
	if err := requireVersion(img, 2, "changing a replication factor"); err != nil {
		return nil, err
	}
	if ev.Assignment != nil {
		if len(ev.Assignment) != len(t.Partitions) {
			return nil, werr(wire.InvalidRequest, "replication factor %d: the assignment names %d partitions; topic %q has %d",
				ev.RF, len(ev.Assignment), t.Name, len(t.Partitions))
		}
		sized := t
		sized.RF = ev.RF
		for i, target := range ev.Assignment {
			if err := validateTarget(img, sized, int32(i), target); err != nil {
				return nil, err
			}
		}
	}
	var out []Record
	if ev.RF != t.RF {
		out = append(out, TopicConfigChanged{Name: t.Name, ID: t.ID, RF: ev.RF})
	}
	pl := newPlacement(img, t)
	for _, p := range t.Partitions {
		target := p.Target()
		switch {
		case ev.Assignment != nil:
			if slices.Equal(target, ev.Assignment[p.Partition]) {
				continue
			}
			target = ev.Assignment[p.Partition]
		case len(target) < int(ev.RF):
			add, ok := pl.pick(p, int(ev.RF)-len(target))
			if !ok {
				return nil, werr(wire.InvalidReplicationFactor, "replication factor %d: %s-%d can have at most %d replicas on the live brokers (it has %s)",
					ev.RF, t.Name, p.Partition, len(target)+len(add), ids(target))
			}
			target = append(target, add...)
		case len(target) > int(ev.RF):
			drop := droppedReplicas(img, p, target, int(ev.RF))
			pl.remove(drop)
			target = minus(target, drop)
		default:
			continue
		}
		c, changed, err := retarget(img, p, target)
		if err != nil {
			return nil, werr(wire.IneligibleReplica, "%s-%d: %v", t.Name, p.Partition, err)
		}
		if changed {
			out = append(out, c)
		}
	}
	return out, nil
}

// droppedReplicas returns the replicas of target to drop so that n remain:
// brokers that are not live first, then replicas out of the ISR, then (with
// racks) a replica whose rack another remaining replica shares, then the
// last in target's order; never p's leader.
func droppedReplicas(img *Image, p PartitionState, target []int32, n int) []int32 {
	rank := func(r int32) int {
		switch {
		case r == p.Leader:
			return 3
		case !img.Live(r):
			return 0
		case !p.InISR(r):
			return 1
		}
		return 2
	}
	racks := img.Racks(target)
	keep := slices.Clone(target)
	shared := func(r int32) int { // 0: another kept replica is in r's rack
		for _, o := range keep {
			if o != r && racks != nil && racks[o] == racks[r] {
				return 0
			}
		}
		return 1
	}
	var out []int32
	for len(keep) > n {
		// Among equals, the last in preference order goes first.
		drop := len(keep) - 1
		for i := len(keep) - 2; i >= 0; i-- {
			a, b := keep[i], keep[drop]
			if c := cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(shared(a), shared(b))); c < 0 {
				drop = i
			}
		}
		out = append(out, keep[drop])
		keep = slices.Delete(keep, drop, drop+1)
	}
	return out
}

// placement tracks, while a decision adds replicas, how many replicas each
// broker holds of the topic and in all.
type placement struct {
	live       []int32
	topic, all map[int32]int
	racks      map[int32]string // every broker's failure domain; nil: no racks (racks.go)
}

func newPlacement(img *Image, t TopicState) *placement {
	pl := &placement{topic: map[int32]int{}, all: map[int32]int{}}
	var every []int32
	for _, b := range img.Brokers() {
		every = append(every, b.ID)
		if img.Live(b.ID) {
			pl.live = append(pl.live, b.ID)
		}
	}
	pl.racks = img.Racks(every)
	img.EachPartition(func(p PartitionState) bool {
		for _, r := range p.Target() {
			pl.all[r]++
			if p.Topic == t.Name {
				pl.topic[r]++
			}
		}
		return true
	})
	return pl
}

// pick returns n live brokers outside p's target, counting them as
// placed; false (with those found) when there are fewer. A broker in a rack
// that holds none of p's replicas yet comes first; then a replica that a
// reassignment in progress is removing (it holds a copy); then the broker
// with the fewest replicas of the topic, then in all.
func (pl *placement) pick(p PartitionState, n int) ([]int32, bool) {
	target := p.Target()
	var out []int32
	for range n {
		best := int32(0)
		newRack := func(b int32) bool {
			if pl.racks == nil {
				return false
			}
			for _, r := range append(slices.Clone(target), out...) {
				if pl.racks[r] == pl.racks[b] {
					return false
				}
			}
			return true
		}
		better := func(b int32) bool {
			if nb, nbest := newRack(b), newRack(best); nb != nbest {
				return nb
			}
			if rb, rbest := slices.Contains(p.Removing, b), slices.Contains(p.Removing, best); rb != rbest {
				return rb
			}
			return pl.topic[b] < pl.topic[best] || (pl.topic[b] == pl.topic[best] && pl.all[b] < pl.all[best])
		}
		for _, b := range pl.live {
			if slices.Contains(target, b) || slices.Contains(out, b) {
				continue
			}
			if best == 0 || better(b) {
				best = b
			}
		}
		if best == 0 {
			return out, false
		}
		out = append(out, best)
		pl.topic[best]++
		pl.all[best]++
	}
	return out, true
}

// remove counts rs as no longer placed.
func (pl *placement) remove(rs []int32) {
	for _, r := range rs {
		pl.topic[r]--
		pl.all[r]--
	}
}

// fewestReplicas returns the smallest replica count among t's partitions
// (of the original and the target set while one is reassigned) and that
// partition; false when t has none.
func fewestReplicas(t TopicState) (n int, partition int32, ok bool) {
	for _, p := range t.Partitions {
		m := min(len(p.Original()), len(p.Target()))
		if !ok || m < n {
			n, partition, ok = m, p.Partition, true
		}
	}
	return n, partition, ok
}
