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
//   - Otherwise the first eligible replica, in assignment order, of the ELR
//     the change leaves (nextELR) leads, and the ISR becomes just that
//     replica: it holds every record below the HW (KIP-966).
//   - Otherwise, if unclean election is allowed, the first eligible replica
//     outside the ISR (not one being added by a reassignment) leads, the ISR
//     becomes just that replica and the ELR is emptied.
//   - Otherwise the partition goes offline (leader NoLeader).
//
// The ELR follows the new ISR (nextELR, with the topic's min ISR minISR).
// The leader epoch is bumped when the leader changes; the partition epoch on
// any change. ok is false when nothing would change.
func partitionChange(p PartitionState, targetISR []int32, eligible func(int32) bool, unclean bool, minISR int32) (PartitionChange, bool) {
	isr := targetISR
	if len(isr) == 0 {
		isr = p.ISR
	}
	elr := nextELR(p, isr, minISR)
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
		if leader == NoLeader {
			for _, r := range elr {
				if eligible(r) {
					leader, isr = r, []int32{r}
					elr = nextELR(p, isr, minISR)
					break
				}
			}
		}
		if leader == NoLeader && unclean {
			if r, ok := uncleanCandidate(p, eligible); ok {
				leader, isr, elr = r, []int32{r}, nil
			}
		}
	}
	return changeTo(p, isr, leader, elr)
}

// uncleanCandidate is the replica an unclean election of p takes: the first
// eligible one in assignment order that is not being added by a
// reassignment (which may not hold a single record yet).
// A replica that lost its storage as the last ISR member (p.Lost) comes
// last: it holds nothing of the partition.
func uncleanCandidate(p PartitionState, eligible func(int32) bool) (int32, bool) {
	for _, lost := range []bool{false, true} {
		for _, r := range p.Replicas {
			if eligible(r) && !slices.Contains(p.Adding, r) && p.InLost(r) == lost {
				return r, true
			}
		}
	}
	return NoLeader, false
}

// nextELR is p's ELR once its ISR becomes isr, under min ISR minISR. While
// isr has minISR members or more it is empty: the HW moves again without
// the replicas outside it, which may then fall behind it. Otherwise it is
// p's ELR and the members of p's ISR that isr drops, less the members of
// isr, in assignment order: a replica that leaves an ISR going below min
// ISR holds every record below the HW (its log end was counted in the HW,
// whose rule, replica.NextHW, then stops it until the ISR is back at min
// ISR), and so do the ELR's replicas as long as the ISR stays below.
// Acknowledged acks=all records all lie below that HW.
func nextELR(p PartitionState, isr []int32, minISR int32) []int32 {
	if int32(len(isr)) >= minISR {
		return nil
	}
	var out []int32
	for _, r := range p.Replicas {
		if !slices.Contains(isr, r) && (p.InISR(r) || p.InELR(r)) {
			out = append(out, r)
		}
	}
	return out
}

// changeTo builds the record moving p to (isr, leader, elr), or ok=false if
// that is p's current state.
func changeTo(p PartitionState, isr []int32, leader int32, elr []int32) (PartitionChange, bool) {
	if leader == p.Leader && slices.Equal(isr, p.ISR) && slices.Equal(elr, p.ELR) {
		return PartitionChange{}, false
	}
	c := PartitionChange{
		Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition,
		Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(isr), Leader: leader,
		// An empty ELR is nil, as decoded: the field is omitted when empty.
		LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch + 1, ELR: nilIfEmpty(slices.Clone(elr)),
		Adding: slices.Clone(p.Adding), Removing: slices.Clone(p.Removing),
	}
	if len(isr) == 0 {
		c.Lost = slices.Clone(p.Lost) // an ISR again ends it (PartitionState.Lost)
	}
	if leader != p.Leader {
		c.LeaderEpoch++
	}
	return c, true
}

// without returns s minus id, in order (a new slice).
func without(s []int32, id int32) []int32 { return minus(s, []int32{id}) }

// removeFromPartitions takes broker id out of every ISR and leadership,
// electing replacements (the shared core of fencing and controlled shutdown).
// eligible must already exclude id. Where the leader changes, favored (nil:
// none) picks among the ISR members that could lead (favorLeader).
func removeFromPartitions(img *Image, id int32, eligible, favored func(int32) bool) []Record {
	var out []Record
	img.EachPartition(func(p PartitionState) bool {
		if !p.InISR(id) && p.Leader != id {
			return true
		}
		t, _ := img.Topic(p.Topic)
		target := without(p.ISR, id)
		if c, ok := partitionChange(p, target, eligible, t.UncleanLeaderElection(), t.MinISR); ok {
			out = append(out, favorLeader(p, c, target, eligible, favored, t.MinISR))
		}
		return true
	})
	return out
}

// favorLeader returns c, p's change to targetISR, with its new leader
// replaced by the first member of targetISR in assignment order that is
// eligible and favored, if c elected a leader that favored does not
// accept and such a member leads with the same ISR and ELR. Only the
// choice among the ISR's members changes: not the current leader kept, not
// an election from the ELR or an unclean one, and never an ISR.
func favorLeader(p PartitionState, c PartitionChange, targetISR []int32, eligible, favored func(int32) bool, minISR int32) PartitionChange {
	if favored == nil || c.Leader == NoLeader || c.Leader == p.Leader || favored(c.Leader) {
		return c
	}
	both := func(x int32) bool { return eligible(x) && favored(x) }
	f, ok := partitionChange(p, targetISR, both, false, minISR)
	if !ok || f.Leader == NoLeader || !slices.Contains(targetISR, f.Leader) ||
		!slices.Equal(f.ISR, c.ISR) || !slices.Equal(f.ELR, c.ELR) {
		return c
	}
	return f
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
		if c, ok := partitionChange(p, p.ISR, eligible, t.UncleanLeaderElection(), t.MinISR); ok {
			out = append(out, c)
		}
		return true
	})
	return out
}

// dropRestartedReplica takes broker id, which has registered a new
// incarnation whose logs may be shorter than its previous one's, out of
// ELRs (KIP-966 drops a replica from the ELR on an unclean shutdown): out
// of every one under --fsync interval or never (unsynced), where a restart
// may have lost a tail below what it reported as fetched
// (RegisterEvent.UnsyncedLogs); under --fsync always it kept them and
// stays, except in the partitions whose logs it found with a damaged tail
// (RegisterEvent.TornReplicas: data damaged on disk may have been
// acknowledged; a chaos run elected such a replica from the ELR and lost
// an acknowledged record). Where its storage is new (lost(p): its data directory was wiped
// or replaced, RegisterEvent.NewStorage, or that partition's directory,
// RegisterEvent.EmptyReplicas), it holds nothing of what its earlier
// incarnations had: it leaves that ELR, and the ISR it was kept in as the
// last member of an offline partition (fencing the earlier incarnation
// took it out of the others).
// Such a partition's ISR becomes one replica of its ELR (which all hold
// every record below the HW): the first eligible one in assignment order,
// which leads, else the first; the others stay in the ELR. Without an ELR
// (min ISR 1, or RF 1) no replica is known to hold the partition's
// acknowledged records: the ISR becomes empty and the partition stays
// offline (KIP-966) until an unclean election (when the topic's
// unclean.leader.election.enable is set, or at the next unfencing once it
// is: electOffline) takes a live replica and with it the loss of what only
// the lost storage held. (With unclean election already allowed, a live
// replica would have led before the partition went offline.) Electing
// the wiped replica as before would have handed out the offsets of
// acknowledged records a second time. A replica whose storage is lost while
// the partition is offline this way joins Lost as well.
func dropRestartedReplica(img *Image, id int32, eligible func(int32) bool, unsynced, lost func(PartitionState) bool) []Record {
	var out []Record
	img.EachPartition(func(p PartitionState) bool {
		storageLost := lost(p)
		if storageLost && len(p.ISR) == 0 && p.HasReplica(id) && !p.InLost(id) {
			// Offline, waiting for an unclean election: that election
			// now takes id last (uncleanCandidate), like the replicas
			// that lost their storage as the last ISR member.
			c := PartitionChange(clonePartition(p))
			c.ELR = nilIfEmpty(without(p.ELR, id))
			c.Lost = append(c.Lost, id)
			c.PartitionEpoch++
			out = append(out, c)
			return true
		}
		if !(storageLost && p.InISR(id)) && !(p.InELR(id) && (unsynced(p) || storageLost)) {
			return true
		}
		isr, leader, elr := p.ISR, p.Leader, without(p.ELR, id)
		if storageLost && p.InISR(id) {
			if isr = without(p.ISR, id); len(isr) == 0 && len(elr) > 0 {
				next := elr[0]
				if i := slices.IndexFunc(elr, eligible); i >= 0 {
					next = elr[i]
				}
				isr, elr = []int32{next}, without(elr, next)
			}
			if leader == id {
				leader = NoLeader
			}
			if i := slices.IndexFunc(isr, eligible); leader == NoLeader && i >= 0 {
				leader = isr[i]
			}
		}
		c, ok := changeTo(p, isr, leader, elr)
		if ok && storageLost && p.InISR(id) && len(isr) == 0 {
			// id was the ISR, so not yet in p.Lost (set only while the
			// ISR is empty).
			c.Lost = append(slices.Clone(p.Lost), id)
		}
		if ok {
			out = append(out, c)
		}
		return true
	})
	return out
}
