package replica

import (
	"slices"
	"time"
)

// effectiveISR is the set the HW is computed over: the committed ISR, or
// during a pending change the union of the committed and the proposed sets
// (for a shrink that is the committed set, for an expansion the proposed
// one), always including the leader itself.
func (r *Replica) effectiveISR() []int32 {
	set := slices.Clone(r.isr)
	for _, id := range r.pending {
		if !slices.Contains(set, id) {
			set = append(set, id)
		}
	}
	if !slices.Contains(set, r.cfg.ID) {
		set = append(set, r.cfg.ID)
	}
	return set
}

// maybeAdvanceHW applies NextHW and completes the parked requests it passes.
func (r *Replica) maybeAdvanceHW() Decisions {
	set := r.effectiveISR()
	leos := make([]int64, 0, len(set))
	for _, id := range set {
		if id == r.cfg.ID {
			leos = append(leos, r.durable)
		} else {
			leos = append(leos, r.FollowerLEO(id))
		}
	}
	nh := NextHW(r.hw, leos, r.minISR)
	if nh <= r.hw {
		return r.decisions()
	}
	r.hw = nh
	return Decisions{HW: nh, HWChanged: true, WakeFetchers: true, Complete: r.completeParked()}
}

// maybeShrink proposes removing ISR members (other than the leader) that have
// not caught up within the lag time. Nothing is proposed while a change is
// pending.
func (r *Replica) maybeShrink(now time.Time) []int32 {
	if r.pending != nil {
		return nil
	}
	var keep []int32
	shrunk := false
	for _, id := range r.isr {
		if p := r.followers[id]; id != r.cfg.ID && (p == nil || now.Sub(p.lastCaughtUp) > r.cfg.LagTime) {
			shrunk = true
			continue
		}
		keep = append(keep, id)
	}
	if !shrunk {
		return nil
	}
	if keep == nil {
		keep = []int32{}
	}
	return r.propose(keep)
}

// propose makes set the pending ISR change, noting each follower's
// incarnation as of now, and returns it.
func (r *Replica) propose(set []int32) []int32 {
	r.pending = set
	r.pendingInc = make(map[int32]int64, len(set))
	for _, id := range set {
		if id != r.cfg.ID {
			r.pendingInc[id] = r.FollowerIncarnation(id)
		}
	}
	return set
}

// inSync is Kafka's isFollowerInSync for re-entry: the follower has reached
// both the HW and the start of the current leader epoch.
func (r *Replica) inSync(p *progress) bool {
	return p.leo >= 0 && p.leo >= r.hw && p.leo >= r.epochStart
}

// maybeExpand proposes adding follower id if it has caught up.
func (r *Replica) maybeExpand(id int32) []int32 {
	if r.pending != nil || slices.Contains(r.isr, id) {
		return nil
	}
	p := r.followers[id]
	if p == nil || !r.inSync(p) {
		return nil
	}
	if r.cfg.Eligible != nil && !r.cfg.Eligible(id, p.incarnation) {
		return nil
	}
	// Keep the replica assignment's order.
	var next []int32
	for _, rid := range r.replicas {
		if rid == id || slices.Contains(r.isr, rid) {
			next = append(next, rid)
		}
	}
	for _, rid := range r.isr { // members outside the assignment (should not happen) stay
		if !slices.Contains(next, rid) {
			next = append(next, rid)
		}
	}
	return r.propose(next)
}

// maybeExpandAny tries every follower outside the ISR, in replica order,
// that has fetched within the lag time (a retry after a refused or failed
// proposal needs no new fetch). A follower refused since its last fetch
// (refusedSince) comes after every other, the least recently refused first:
// one whose process is gone is refused until the lag time runs out, and in
// replica order it was proposed at every tick ahead of a follower that
// could return (a chaos run's partition, below min ISR, waited 1.5 s for
// the dead one's restart). Kafka expands only on a fetch: a follower whose
// last fetch reached an HW that has not moved since (the ISR below min ISR)
// but which fetches no more (its disk hangs) was added back at every tick
// after each shrink, and shrunk again a lag time later.
func (r *Replica) maybeExpandAny(now time.Time) []int32 {
	retry := int32(-1) // the least recently refused candidate
	for _, id := range r.replicas {
		if id == r.cfg.ID {
			continue
		}
		f := r.followers[id]
		if f == nil || f.lastFetch.IsZero() || now.Sub(f.lastFetch) > r.cfg.LagTime {
			continue
		}
		if f.refusedSince() {
			if r.inSync(f) && !slices.Contains(r.isr, id) && (retry < 0 || f.refusal < r.followers[retry].refusal) {
				retry = id
			}
			continue
		}
		if p := r.maybeExpand(id); p != nil {
			return p
		}
	}
	if retry >= 0 {
		return r.maybeExpand(retry)
	}
	return nil
}
