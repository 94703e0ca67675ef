package broker

import (
	"slices"
	"time"

	"paymentlog/node/replica"
)

// logShrinkLocked says why a proposed ISR leaves members of the current one
// out, as Kafka's "Shrinking ISR" line does: the leader's end and HW, and
// for each member left out how far behind the leader's end it is, when it
// last caught up and when it last fetched (a follower that fetches but
// stays behind is slow; one that stopped fetching is gone or cut off).
// Nothing is logged for a proposal that only adds members. p.mu held.
func (p *partition) logShrinkLocked(proposed []int32) {
	r := p.mu.r
	now := p.b.cfg.Now()
	lags := r.FollowerLags()
	for _, id := range r.ISR() {
		if id == p.b.cfg.NodeID || slices.Contains(proposed, id) {
			continue
		}
		attrs := []any{"follower", id, "leader_leo", r.LEO(), "hw", r.HW(), "lag_time", p.b.cfg.ReplicaLagTime, "proposed_isr", proposed}
		i := slices.IndexFunc(lags, func(l replica.FollowerLag) bool { return l.ID == id })
		switch {
		case i < 0 || !lags[i].LEOKnown:
			attrs = append(attrs, "fetched", false)
		default:
			l := lags[i]
			attrs = append(attrs, "behind", l.Messages, "caught_up_ago", ago(now, l.CaughtUp), "fetched_ago", ago(now, l.LastFetch))
		}
		p.lg.Info("shrinking ISR: follower out of sync", attrs...)
	}
}

// ago is how long before now t was, rounded to the millisecond; -1 for a
// zero t (never).
func ago(now, t time.Time) time.Duration {
	if t.IsZero() {
		return -1
	}
	return now.Sub(t).Round(time.Millisecond)
}
