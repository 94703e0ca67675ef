package client

import (
	"time"

	"paymentlog/wire"
)

// Reading from the follower in the consumer's rack (ConsumerConfig.Rack,
// KIP-392; the node side is node/broker/follower_reads.go).

// readFrom is the address to fetch cp from: the follower its leader named,
// while that holds (same leader epoch, not expired, the follower's address
// known), else the leader's.
func (cs *Consumer) readFrom(snap *snapshot, cp *cpart, ld leader, now time.Time) string {
	if cp.preferred == 0 {
		return ld.addr
	}
	if now.After(cp.preferredUntil) || cp.preferredEpoch != ld.epoch || cs.rack(now) == "" {
		cp.preferred = 0
		return ld.addr
	}
	if a, ok := snap.addr(cp.preferred); ok {
		return a
	}
	cp.preferred = 0
	return ld.addr
}

// followerRetryAfter is how long a consumer reads from the leaders only
// after a fetch from a follower failed: a follower that is down stays in
// the ISR for up to the replica lag time, and its leader keeps naming it.
const followerRetryAfter = 10 * time.Second

// rack is the rack fetches name at now: ConsumerConfig.Rack, or "" while
// rack reads are off after a follower failed.
func (cs *Consumer) rack(now time.Time) string {
	if now.Before(cs.rackOffUntil) {
		return ""
	}
	return cs.cfg.Rack
}

// fromFollower handles what only rack reads bring, and reports whether the
// answer for cp is dealt with: a leader naming the follower to read from
// (fetch there at once), or a failed fetch from a follower, whatever the
// error (back to the leader at once: it answers with authority, e.g. the
// divergence or the range a follower does not hold).
func (cs *Consumer) fromFollower(cp *cpart, r fetchResult, pr *wire.FetchPartitionResponse, now time.Time) bool {
	if pr != nil && r.err == nil && pr.PreferredReplica != 0 {
		cp.preferred, cp.preferredUntil, cp.preferredEpoch = pr.PreferredReplica, now.Add(PreferredReplicaMaxAge), pr.LeaderEpoch
		cs.c.log.Debug("reading from the follower in this consumer's rack", "topic", cp.tp.Topic, "partition", cp.tp.Partition,
			"follower", pr.PreferredReplica, "rack", cs.cfg.Rack)
		return true
	}
	if cp.preferred == 0 || r.call == nil || r.addr == "" {
		return false
	}
	ld, ok := cs.c.meta.current().leaderOf(cp.tp.Topic, cp.tp.Partition)
	if ok && r.addr == ld.addr {
		return false // answered by the leader
	}
	if r.err != nil || pr == nil || pr.Err != wire.None || pr.Diverging != nil {
		cs.c.log.Debug("fetch from the follower failed: back to the leader", "topic", cp.tp.Topic, "partition", cp.tp.Partition,
			"follower", cp.preferred, "err", r.err)
		cp.preferred = 0
		cs.rackOffUntil = now.Add(followerRetryAfter)
		return true
	}
	return false
}
