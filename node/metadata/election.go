package metadata

import "slices"

// partitionChange computes the PartitionChange that moves p to targetISR,
// keeping or electing a leader:
//
//   - An empty targetISR means the ISR would lose its last member: the ISR is
//     kept as it is (the partition's last in-sync copies stay named).
//   - The current leader stays if it is in the target ISR and eligible.
//   - Otherwise the first replica, in assignment order, that is in the target
//     ISR and eligible leads.
//   - Otherwise, if unclean election is allowed, the first eligible replica
//     outside the ISR (not one being added by a reassignment) leads and the
//     ISR becomes just that replica.
//   - Otherwise the partition goes offline (leader NoLeader).
//
// The leader epoch is bumped when the leader changes; the partition epoch on
// any change. ok is false when nothing would change.
func partitionChange(p PartitionState, targetISR []int32, eligible func(int32) bool, unclean bool) (PartitionChange, bool) {
	isr := targetISR
	if len(isr) == 0 {
		isr = p.ISR
	}
	leader := NoLeader
	switch {
	case p.Leader != NoLeader && slices.Contains(isr, p.Leader) && eligible(p.Leader):
		leader = p.Leader
	default:
		for _, r := range p.Replicas {
			if slices.Contains(isr, r) && eligible(r) {
				leader = r
				break
			}
		}
		if leader == NoLeader && unclean {
			for _, r := range p.Replicas {
				// A replica being added may not have a single record yet.
				if eligible(r) && !slices.Contains(p.Adding, r) {
					leader, isr = r, []int32{r}
					break
				}
			}
		}
	}
	return changeTo(p, isr, leader)
}

// changeTo builds the record moving p to (isr, leader), or ok=false if that
// is p's current state.
func changeTo(p PartitionState, isr []int32, leader int32) (PartitionChange, bool) {
	if leader == p.Leader && slices.Equal(isr, p.ISR) {
		return PartitionChange{}, false
	}
	c := PartitionChange{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition,
		Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(isr), Leader: leader,
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1,
		Adding: slices.Clone(p.Adding), Removing: slices.Clone(p.Removing),
	}
	if leader != p.Leader {
		c.LeaderEpoch++
	}
	return c, true
}

// without returns s minus id, in order (a new slice).
func without(s []int32, id int32) []int32 {
	out := make([]int32, 0, len(s))
	for _, x := range s {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// removeFromPartitions takes broker id out of every ISR and leadership,
// electing replacements (the shared core of fencing and controlled shutdown).
// eligible must already exclude id.
func removeFromPartitions(img *Image, id int32, eligible func(int32) bool) []Record {
	var out []Record
	img.EachPartition(func(p PartitionState) bool {
		if !p.InISR(id) && p.Leader != id {
			return true
		}
		t, _ := img.Topic(p.Topic)
		if c, ok := partitionChange(p, without(p.ISR, id), eligible, t.UncleanLeaderElection()); ok {
			out = append(out, c)
		}
		return true
	})
	return out
}

// electOffline gives a leader to every offline partition that can now have
// one (after a broker was unfenced).
func electOffline(img *Image, eligible func(int32) bool) []Record {
	var out []Record
	img.EachPartition(func(p PartitionState) bool {
		if p.Leader != NoLeader {
			return true
		}
		t, _ := img.Topic(p.Topic)
		if c, ok := partitionChange(p, p.ISR, eligible, t.UncleanLeaderElection()); ok {
			out = append(out, c)
		}
		return true
	})
	return out
}
