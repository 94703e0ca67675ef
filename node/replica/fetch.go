package replica

import (
	"slices"
	"time"
)

// EpochSource answers KIP-101's OffsetsForLeaderEpoch from a log's
// leader-epoch cache: the largest epoch <= epoch the log knows and the start
// offset of the next higher epoch (or the log end offset if it is the latest);
// (-1, -1) if the log knows no such epoch. *segment.Log implements it.
type EpochSource interface {
	EndOffsetForEpoch(epoch int32) (int32, int64)
}

// Fetch is one follower's fetch of one partition.
type Fetch struct {
	ReplicaID          int32
	Incarnation        int64 // the follower's registered incarnation (0 = unknown)
	FetchOffset        int64 // the follower's LEO
	LastFetchedEpoch   int32 // epoch of the follower's last batch, -1 if its log is empty
	CurrentLeaderEpoch int32 // the leader epoch the follower believes in
}

// FetchCheck is the leader's verdict on a follower fetch.
type FetchCheck struct {
	Code Code
	// DivergingEpoch >= 0 or DivergingEndOffset >= 0: the follower's log
	// diverges from ours; it must truncate (TruncationOffset) and fetch
	// again. Both are -1 when there is no divergence. DivergingEpoch == -1
	// with DivergingEndOffset >= 0 means the leader knows no epoch as old as
	// the follower's: the follower restarts its log at DivergingEndOffset.
	DivergingEpoch     int32
	DivergingEndOffset int64
}

// Diverged reports whether the fetch found a divergence.
func (c FetchCheck) Diverged() bool { return c.DivergingEndOffset >= 0 }

// CheckEpoch compares a request's leader epoch with ours (-1 = don't check).
func (r *Replica) CheckEpoch(requestEpoch int32) Code {
	switch {
	case r.role != RoleLeader:
		return NotLeader
	case requestEpoch < 0 || requestEpoch == r.leaderEpoch:
		return OK
	case requestEpoch < r.leaderEpoch:
		return FencedLeaderEpoch
	default:
		return UnknownLeaderEpoch
	}
}

// CheckEpochAhead is CheckEpoch for a follower's or consumer's fetch or a
// produce, whose sender may have applied the metadata that makes this replica the leader
// before this node has (it will within moments): a request naming a newer
// epoch than a replica that does not lead is answered UnknownLeaderEpoch,
// which the sender retries soon (it wrote nothing), not NotLeader, which
// sends it to refresh its metadata and back off (Kafka checks the epoch
// before the leadership too).
func (r *Replica) CheckEpochAhead(requestEpoch int32) Code {
	if r.role != RoleLeader && requestEpoch > r.leaderEpoch {
		return UnknownLeaderEpoch
	}
	return r.CheckEpoch(requestEpoch)
}

// CheckProduce says whether a produce with the client's leader epoch may be
// appended now. acksAll requests are refused up front while the committed ISR
// is below the minimum ISR (Kafka refuses only acks=all; acks=1 records are
// kept but stay invisible until the ISR recovers, since the HW cannot move).
func (r *Replica) CheckProduce(requestEpoch int32, acksAll bool) Code {
	if c := r.CheckEpochAhead(requestEpoch); c != OK {
		return c
	}
	if acksAll && len(r.isr) < r.minISR {
		return NotEnoughReplicas
	}
	return OK
}

// FollowerFetch validates a follower's fetch (epochs, range, divergence) and,
// if it is valid, records the follower's progress: that may advance the HW
// and complete parked produces, or propose the follower's re-entry to the
// ISR. log is the leader's own epoch cache.
func (r *Replica) FollowerFetch(log EpochSource, f Fetch, now time.Time) (FetchCheck, Decisions) {
	chk := FetchCheck{Code: OK, DivergingEpoch: -1, DivergingEndOffset: -1}
	d := r.decisions()
	if chk.Code = r.CheckEpochAhead(f.CurrentLeaderEpoch); chk.Code != OK {
		return chk, d
	}
	if f.ReplicaID == r.cfg.ID || !slices.Contains(r.replicas, f.ReplicaID) {
		chk.Code = NotReplica
		return chk, d
	}
	p := r.followers[f.ReplicaID]
	if p == nil { // a replica added to the assignment while we lead
		p = &progress{leo: -1, lastFetchLeaderLEO: -1}
		r.followers[f.ReplicaID] = p
	}
	if f.Incarnation != 0 && f.Incarnation < p.incarnation {
		// A replaced process (its fetch delayed, or it is still exiting):
		// it must not take the place of the newer one it reported before.
		chk.Code = StaleIncarnation
		return chk, d
	}
	p.fetchedBy(f.Incarnation)
	if f.FetchOffset < r.logStart {
		chk.Code = OffsetOutOfRange
		return chk, d
	}
	if f.LastFetchedEpoch >= 0 {
		e, end := log.EndOffsetForEpoch(f.LastFetchedEpoch)
		switch {
		case e < 0 || end < 0:
			chk.DivergingEpoch, chk.DivergingEndOffset = -1, r.logStart
			return chk, d
		case e < f.LastFetchedEpoch || end < f.FetchOffset:
			chk.DivergingEpoch, chk.DivergingEndOffset = e, end
			return chk, d
		}
	}
	if f.FetchOffset > r.leo {
		chk.Code = OffsetOutOfRange
		return chk, d
	}
	p.update(f.FetchOffset, r.leo, now, r.cfg.LagTime)
	d = r.maybeAdvanceHW()
	if prop := r.maybeExpand(f.ReplicaID); prop != nil {
		d.ProposeISR = prop
	}
	d.HW = r.hw
	return chk, d
}

// TruncationOffset is where a follower truncates after its leader answered
// a fetch with (divEpoch, divEnd): the smaller of the leader's end offset for
// that epoch and the follower's own end offset for it (Kafka's
// truncateOnFetchResponse). local is the follower's epoch cache and leo its
// log start and end offsets. fully says the follower must discard its whole log and
// restart at the returned offset (the leader knows no epoch that old).
// Truncation may take several rounds: the follower fetches again with its new
// last epoch and the leader checks again.
func TruncationOffset(local EpochSource, logStart, leo int64, divEpoch int32, divEnd int64) (offset int64, fully bool) {
	if divEpoch < 0 {
		return divEnd, true
	}
	e, end := local.EndOffsetForEpoch(divEpoch)
	if e < 0 || end < 0 {
		// We know no epoch that old: everything we have diverges.
		return logStart, false
	}
	return min(divEnd, end, leo), false
}
