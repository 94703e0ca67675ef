package replica

import "time"

// When a follower was last caught up.
//
// Kafka's rule (Replica.updateFetchState) counts a follower as caught up at
// a fetch that reaches the leader's LEO, or at the time of its previous
// fetch when this one reaches the LEO the leader had then. It measures one
// fetch round, and it fails a follower whose answers are cut short by the
// fetch size while producers keep the leader ahead of it. With acks=all
// that is the steady state at full load: every record a follower takes
// moves the HW, which lets the producers send as much again, so the leader
// stays a whole in-flight window ahead (two producers with five 1 MiB
// batches in flight on a partition: up to 10 MiB). When that window is
// larger than what one answer carries (8 MiB by default, shared by the
// partitions a follower fetches from that leader), no fetch reaches the
// LEO of the fetch before it. The follower was then a fraction of a second
// behind and keeping pace, and its ISR was shrunk after the lag time
// (`paymentlog bench` at full load, about one run in twenty: "shrinking
// ISR: follower out of sync ... behind=8865 caught_up_ago=2.161s
// fetched_ago=156ms").
//
// So the leader also remembers its LEO at a few earlier fetches, one per
// lag time / leoHistoryLen at most. A fetch that reaches the LEO of one of
// them has every record the leader had at that time: the follower was
// caught up then. That is the lag in time the lag time bounds. A follower
// that falls further and further behind, or stops fetching, is still
// shrunk out once what it has is older than the lag time (give or take the
// spacing, by which the kept times err early); one that keeps within a
// window of the leader stays. The rule only ever finds a later time than
// Kafka's, so a follower leaves the ISR later than with Kafka's, never
// earlier, and an ISR that keeps a member longer only makes acks=all wait
// for it.

// leoHistoryLen is how many earlier fetches the leader keeps per follower.
const leoHistoryLen = 8

// leoPoint is the leader's LEO at a fetch.
type leoPoint struct {
	at  time.Time
	leo int64
}

// leoHistory is a ring of leoPoints, oldest overwritten first.
type leoHistory struct {
	points [leoHistoryLen]leoPoint
	n      int // points held
	next   int // where the next point goes
}

// add keeps (at, leo) unless the newest point kept is less than spacing
// older.
func (h *leoHistory) add(at time.Time, leo int64, spacing time.Duration) {
	if h.n > 0 {
		newest := h.points[(h.next+leoHistoryLen-1)%leoHistoryLen]
		if at.Sub(newest.at) < spacing {
			return
		}
	}
	h.points[h.next] = leoPoint{at: at, leo: leo}
	h.next = (h.next + 1) % leoHistoryLen
	h.n = min(h.n+1, leoHistoryLen)
}

// reachedAt returns the latest time kept at which the leader's LEO was at
// most offset; false when none was.
func (h *leoHistory) reachedAt(offset int64) (time.Time, bool) {
	var best time.Time
	found := false
	for i := range h.n {
		pt := h.points[i]
		if pt.leo <= offset && (!found || pt.at.After(best)) {
			best, found = pt.at, true
		}
	}
	return best, found
}
