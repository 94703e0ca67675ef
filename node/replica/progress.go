package replica

import "time"

// progress is the leader's view of one follower (Kafka's Replica state).
type progress struct {
	// incarnation is the follower process whose fetches this progress
	// records (KIP-903's broker epoch); 0 until it fetches in this leader
	// epoch. A fetch from another incarnation starts the progress afresh:
	// what an earlier process had fetched says nothing about the log the
	// follower restarted with (fsync interval or never lose the tail).
	incarnation int64
	// leo is the follower's last reported fetch offset, -1 until it fetches
	// in this leader epoch.
	leo int64
	// lastCaughtUp is the last time the follower was known to have every
	// record the leader had: a fetch at or past the leader's LEO, or a fetch
	// at or past the LEO the leader had at the follower's previous fetch.
	lastCaughtUp time.Time
	// lastFetch and lastFetchLeaderLEO remember the previous fetch.
	lastFetch          time.Time
	lastFetchLeaderLEO int64
	// earlier remembers the leader's LEO at earlier fetches, thinned
	// (caughtup.go): a follower whose fetches reach the LEO the leader had
	// at one of them has every record the leader had then.
	earlier leoHistory
	// refusedAsOf is lastFetch when the controller last refused this
	// follower's return to the ISR (ProposalFailed), and refusal the
	// replica's count of refusals then: until a newer fetch, the leader's
	// tick (maybeExpandAny) proposes it only when no follower that was not
	// refused can return, and then the least recently refused first. So a
	// follower whose process is gone is not proposed at every tick for the
	// rest of the lag time, ahead of one that could return.
	refusedAsOf time.Time
	refusal     uint64
}

// refusedSince reports whether the follower's return was refused and it
// has not fetched since.
func (p *progress) refusedSince() bool {
	return !p.refusedAsOf.IsZero() && !p.lastFetch.After(p.refusedAsOf)
}

// update records a fetch at fetchOffset while the leader's LEO is leaderLEO.
// lagTime is the replica's lag time (it spaces the earlier fetches kept).
func (p *progress) update(fetchOffset, leaderLEO int64, now time.Time, lagTime time.Duration) {
	switch {
	case fetchOffset >= leaderLEO:
		p.lastCaughtUp = later(p.lastCaughtUp, now)
	case fetchOffset >= p.lastFetchLeaderLEO && !p.lastFetch.IsZero():
		p.lastCaughtUp = later(p.lastCaughtUp, p.lastFetch)
	default:
		if at, ok := p.earlier.reachedAt(fetchOffset); ok {
			p.lastCaughtUp = later(p.lastCaughtUp, at)
		}
	}
	p.earlier.add(now, leaderLEO, lagTime/leoHistoryLen)
	p.leo = fetchOffset
	p.lastFetch = now
	p.lastFetchLeaderLEO = leaderLEO
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// fetchedBy records that incarnation inc of the follower fetches. A new
// incarnation after a known one forgets everything the earlier process
// reported, including when it was last caught up (the new process has to
// show that itself before it counts as in sync, or stays in the ISR).
func (p *progress) fetchedBy(inc int64) {
	if p.incarnation == inc {
		return
	}
	if p.incarnation != 0 {
		*p = progress{leo: -1, lastFetchLeaderLEO: -1}
	}
	p.incarnation = inc
}
