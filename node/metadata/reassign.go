package metadata

import (
	"fmt"
	"slices"

	"paymentlog/wire"
)

// Reassigning a partition's replicas (Kafka's AlterPartitionReassignments,
// KIP-455): moving a partition off a broker that is being retired or that
// died for good, onto another one, with the leader serving throughout.
//
// A reassignment from the original replicas O to a target T is one
// PartitionChange that sets Replicas to T followed by O−T, Adding to T−O and
// Removing to O−T. The added replicas are followers like any other: they
// fetch from the leader from its log start, and the leader asks for them in
// the ISR (AlterPartition) once they are caught up. The AlterPartition that
// makes every target replica an ISR member also completes the reassignment,
// in the same record: Replicas becomes T, the ISR keeps only T's members,
// Adding and Removing are cleared, and if the leader was being removed the
// first live target replica in the ISR leads under the next leader epoch.
// Brokers that no longer hold a replica stop it and delete its data when
// they apply that record (node/watch.go), as for a deleted topic.
//
// Nothing about acknowledged records changes: the ISR only ever grows by
// caught-up replicas, the leader keeps answering acks=all once every ISR
// member has a record, and at completion the ISR loses only the removed
// replicas, so every acknowledged record is on every remaining member.
// Until completion the old replicas stay full members (the partition keeps
// its redundancy while the copy is made), and an added replica is never
// elected unclean: it may not hold a single record yet.
//
// A new target while a reassignment is in progress replaces it (the
// original replicas stay those before the first); cancelling returns to the
// original replicas, in the target's order where they are in it and then
// the removed ones (as in Kafka, whose records do not keep the original
// order either): a cancel may change the preferred leader. Either drops
// added replicas not in the new target from the replicas, the ISR and the
// ELR. A target has exactly the topic's replication factor of replicas
// (DecideReplicationFactor changes it for every partition at once); the order of the target is the new preference order
// (its first replica is the preferred leader), which also makes a
// reassignment that only reorders a partition's replicas complete at once.

// ReassignEvent asks that a partition's replicas become Target, or with
// Cancel that a reassignment in progress be undone.
type ReassignEvent struct {
	Topic     string
	Partition int32
	Target    []int32
	Cancel    bool
}

// Reassigning reports whether a reassignment of p is in progress.
func (p PartitionState) Reassigning() bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }

// Target is the replica set p is being reassigned to: its replicas when no
// reassignment is in progress.
func (p PartitionState) Target() []int32 { return minus(p.Replicas, p.Removing) }

// Original is p's replica set before the reassignment in progress (in the
// current order): its replicas when none is in progress.
func (p PartitionState) Original() []int32 { return minus(p.Replicas, p.Adding) }

// minus returns the members of s not in drop, in s's order (a new slice).
func minus(s, drop []int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, x := range s {
		if !slices.Contains(drop, x) {
			out = append(out, x)
		}
	}
	return out
}

// DecideReassign starts, replaces or cancels a reassignment of one
// partition. Refused: an unknown topic or partition
// (UnknownTopicOrPartition); a target that is not the topic's replication
// factor in size, names a broker twice or a broker that never registered
// (InvalidReplicationFactor, InvalidRequest); a cancel with none in progress
// (InvalidRequest); a change that would leave the partition without an
// in-sync replica or without a live one to lead (IneligibleReplica). A
// target equal to the current one is accepted with no records (a retry).
func DecideReassign(img *Image, ev ReassignEvent) ([]Record, error) {
	t, ok := img.Topic(ev.Topic)
	if !ok || ev.Partition < 0 || int(ev.Partition) >= len(t.Partitions) {
		return nil, werr(wire.UnknownTopicOrPartition, "%s-%d does not exist", ev.Topic, ev.Partition)
	}
	p := t.Partitions[ev.Partition]
	target := ev.Target
	if ev.Cancel {
		if !p.Reassigning() {
			return nil, werr(wire.InvalidRequest, "%s-%d: no reassignment in progress", ev.Topic, ev.Partition)
		}
		target = p.Original()
	} else if err := validateTarget(img, t, ev.Partition, target); err != nil {
		return nil, err
	}
	c, changed, err := retarget(img, p, target)
	if err != nil {
		return nil, werr(wire.IneligibleReplica, "%s-%d: %v", ev.Topic, ev.Partition, err)
	}
	if !changed {
		return nil, nil
	}
	return []Record{c}, nil
}

// retarget returns the change that starts, replaces or undoes p's
// reassignment so that its target becomes target; false when that is
// already its target.
func retarget(img *Image, p PartitionState, target []int32) (PartitionChange, bool, error) {
	if slices.Equal(target, p.Target()) {
		return PartitionChange{}, false, nil
	}
	orig := p.Original()
	next := p
	next.Replicas = append(slices.Clone(target), minus(orig, target)...)
	next.Adding = nilIfEmpty(minus(target, orig))
	next.Removing = nilIfEmpty(minus(orig, target))
	next.ISR = inOrder(next.Replicas, p.ISR)
	c, err := settle(img, p, next)
	return c, err == nil, err
}

// validateTarget checks a reassignment target.
func validateTarget(img *Image, t TopicState, partition int32, target []int32) error {
	if len(target) != int(t.RF) {
		return werr(wire.InvalidReplicationFactor, "%s-%d: %d replicas given; the topic's replication factor is %d",
			t.Name, partition, len(target), t.RF)
	}
	for i, r := range target {
		if slices.Contains(target[:i], r) {
			return werr(wire.InvalidRequest, "%s-%d: broker %d listed twice", t.Name, partition, r)
		}
		if _, ok := img.Broker(r); !ok {
			return werr(wire.InvalidRequest, "%s-%d: broker %d is not registered", t.Name, partition, r)
		}
	}
	return nil
}

// settle builds the change from p to next (whose ISR must already be
// restricted to next's replicas, in their order), completing next's
// reassignment when every target replica is in the ISR, keeping the ELR
// (nextELR) within the new replicas, and electing a leader when p's leader
// is no longer an ISR member (a removed replica, or an added one dropped by
// a cancel). p's leader epoch is bumped when the leader changes and when a
// replica leaves the replica set; an offline partition stays offline. It
// fails when the ISR would be empty or no live ISR member could lead.
//
// The bump on a removal fences the removed replica (Kafka's
// PartitionChangeBuilder does the same): a node that has not applied its
// removal yet (its metadata lags) still fetches in the old epoch, and the
// leader refuses that. Without it, a lagging node removed and then added
// back at the same epoch could fetch, catch up and join the ISR on the
// strength of the copy it still holds, then apply the removal it had not
// yet seen and delete that copy while it counts as in sync: elected then,
// it would come back empty and lose acknowledged records. With it, the
// node can fetch again only in the epoch of the re-add or later, which it
// sees only after the removal, so its copy is deleted before it catches up.
func settle(img *Image, p, next PartitionState) (PartitionChange, error) {
	if next.Reassigning() && subset(next.Target(), next.ISR) {
		next.Replicas = next.Target()
		next.ISR = inOrder(next.Replicas, next.ISR)
		next.Adding, next.Removing = nil, nil
	}
	if len(next.ISR) == 0 {
		return PartitionChange{}, fmt.Errorf("no in-sync replica would be left (in sync: %v)", p.ISR)
	}
	// The ELR follows the new ISR (election.go), among the new replicas
	// only: a replica leaving the partition leaves its ELR too.
	t, _ := img.Topic(p.Topic)
	next.ELR = nilIfEmpty(inOrder(next.Replicas, nextELR(p, next.ISR, t.MinISR)))
	next.Leader = p.Leader
	if p.Leader != NoLeader && !slices.Contains(next.ISR, p.Leader) {
		next.Leader = NoLeader
		for _, r := range next.Replicas {
			if slices.Contains(next.ISR, r) && img.Live(r) {
				next.Leader = r
				break
			}
		}
		if next.Leader == NoLeader {
			return PartitionChange{}, fmt.Errorf("no live in-sync replica could lead (in sync: %v)", next.ISR)
		}
	}
	next.LeaderEpoch = p.LeaderEpoch
	if next.Leader != p.Leader || len(minus(p.Replicas, next.Replicas)) > 0 {
		next.LeaderEpoch++
	}
	next.PartitionEpoch = p.PartitionEpoch + 1
	return PartitionChange(clonePartition(next)), nil
}

// completeOnISR is DecideAlterPartition's change when p is being
// reassigned: the new ISR isr may complete the reassignment.
func completeOnISR(img *Image, p PartitionState, isr []int32) (PartitionChange, bool) {
	next := p
	next.ISR = isr
	c, err := settle(img, p, next)
	return c, err == nil
}

// validateReassignment checks the reassignment fields of a partition state:
// Adding and Removing are disjoint sets of replicas and leave a target.
func validateReassignment(p PartitionState) string {
	for _, s := range [][]int32{p.Adding, p.Removing} {
		for i, r := range s {
			if !slices.Contains(p.Replicas, r) {
				return fmt.Sprintf("reassigned replica %d is not a replica", r)
			}
			if slices.Contains(s[:i], r) {
				return fmt.Sprintf("reassigned replica %d listed twice", r)
			}
		}
	}
	for _, r := range p.Adding {
		if slices.Contains(p.Removing, r) {
			return fmt.Sprintf("replica %d both added and removed", r)
		}
	}
	if len(p.Removing) >= len(p.Replicas) {
		return "a reassignment removes every replica"
	}
	return ""
}

// inOrder returns the members of set in the order of order (a new slice).
func inOrder(order, set []int32) []int32 {
	out := make([]int32, 0, len(set))
	for _, r := range order {
		if slices.Contains(set, r) {
			out = append(out, r)
		}
	}
	return out
}

func subset(s, of []int32) bool {
	for _, x := range s {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

func nilIfEmpty(s []int32) []int32 {
	if len(s) == 0 {
		return nil
	}
	return s
}
