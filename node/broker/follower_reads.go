package broker

import "paymentlog/node/replica"

// Fetching from the closest replica (Kafka's KIP-392). A consumer that
// names its rack (wire.FetchRequest.Rack) is sent by a leader in another
// rack to an in-sync follower in its own (PreferredReplica), and such a
// follower serves it: records below the follower's own HW, which the leader
// moved (so committed), never above. What keeps that as safe as a read on
// the leader:
//
//   - The consumer names the leader epoch it knows (FetchPartition.
//     LeaderEpoch); a follower serves it only while it follows that epoch.
//   - A consumer whose last fetched epoch does not agree with the
//     follower's log is sent to the leader (NotLeader), which answers the
//     divergence (KIP-320) with the authority a follower lacks.
//   - A read is kept only if the replica still follows that epoch after it
//     and no truncation of its log began meanwhile (partition.truncations,
//     raised before each): a follower truncates when its leader's log parts
//     from it, normally above its HW, and a read that raced one is refused
//     rather than served from a log being cut.
//   - A follower's HW advances one fetch round after the leader's, so a
//     consumer there sees a record a few milliseconds later; a follower's
//     HW move wakes the consumers long-polling it.

// rackRead decides a consumer fetch that names its rack, on a replica r
// (mu held) whose own check gave code: on a leader not in the rack with an
// in-sync follower there, the follower to send the consumer to; on a
// follower of the epoch the consumer names, OK and onFollower.
func (b *Broker) rackRead(r *replica.Replica, code replica.Code, reqEpoch int32, rack string) (_ replica.Code, preferred int32, onFollower bool) {
	if b.cfg.RackOf == nil {
		return code, 0, false
	}
	switch r.Role() {
	case replica.RoleLeader:
		if code != replica.OK || b.cfg.RackOf(b.cfg.NodeID) == rack {
			return code, 0, false
		}
		for _, id := range r.ISR() { // the lowest id in the rack
			if id != b.cfg.NodeID && (preferred == 0 || id < preferred) && b.cfg.RackOf(id) == rack {
				preferred = id
			}
		}
		return code, preferred, false
	case replica.RoleFollower:
		if reqEpoch >= 0 && reqEpoch == r.LeaderEpoch() {
			return replica.OK, 0, true
		}
	}
	return code, 0, false
}

// checkFollowing reports whether p still follows epoch and no truncation
// began since truncations was read: a consumer read on a follower may be
// served.
func (p *partition) checkFollowing(epoch int32, truncations uint64) replica.Code {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.stopped || p.mu.r.Role() != replica.RoleFollower || p.mu.r.LeaderEpoch() != epoch || p.truncations.Load() != truncations {
		return replica.NotLeader
	}
	return replica.OK
}
