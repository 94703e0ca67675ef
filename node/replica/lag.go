package replica

import (
	"slices"
	"time"
)

// FollowerLag is the leader's view of one follower, for /metrics.
type FollowerLag struct {
	ID int32
	// Messages is how many offsets the follower is behind the leader's LEO;
	// when it has not fetched since this leadership began (its LEO is
	// unknown), every offset from the log start.
	Messages int64
	// CaughtUp is when the follower was last known to have every record
	// the leader had (zero: not since this leadership began).
	CaughtUp time.Time
	// LastFetch is when the follower last fetched (zero: not in this
	// leadership).
	LastFetch time.Time
	// LEOKnown says the follower fetched in this leadership.
	LEOKnown bool
}

// FollowerLags returns the leader's view of each follower, by id; nil
// unless leader.
func (r *Replica) FollowerLags() []FollowerLag {
	if r.role != RoleLeader {
		return nil
	}
	out := make([]FollowerLag, 0, len(r.followers))
	for id, p := range r.followers {
		l := FollowerLag{ID: id, CaughtUp: p.lastCaughtUp, LastFetch: p.lastFetch, LEOKnown: p.leo >= 0}
		if l.LEOKnown {
			l.Messages = max(r.leo-p.leo, 0)
		} else {
			l.Messages = r.leo - r.logStart
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b FollowerLag) int { return int(a.ID) - int(b.ID) })
	return out
}
