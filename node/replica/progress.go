package replica

import "time"

// progress is the leader's view of one follower (Kafka's Replica state).
//
// A follower's fetch offset says which records it has; its durable end says
// which of them are on disk as its fsync policy requires. Only the durable
// end counts, for the HW and for being caught up. A follower that flushes
// before each fetch reports both equal; a pipelined one fetches the next
// records while it flushes the last, and its durable end arrives with its
// next fetch or in a durable report between fetches.
type progress struct {
	// incarnation is the follower process whose fetches this progress
	// records (KIP-903's broker epoch); 0 until it fetches in this leader
	// epoch. A fetch from another incarnation starts the progress afresh:
	// what an earlier process had fetched says nothing about the log the
	// follower restarted with (fsync interval or never lose the tail).
	incarnation int64
	// leo is the end of the follower's durable prefix as last reported
	// (what counts toward the HW and the ISR), -1 until it fetches in this
	// leader epoch. It never passes fetched.
	leo int64
	// fetched is the follower's last fetch offset this leader checked (its
	// log matches ours below it), -1 until it fetches in this leader epoch.
	fetched int64
	// lastCaughtUp is the last time the follower was known to have every
	// record the leader had, durably: a durable end at or past the leader's
	// LEO now, or at or past the LEO the leader had at one of the
	// follower's recent fetches (it was caught up as of that fetch).
	lastCaughtUp time.Time
	// fetches are the follower's most recent fetches, newest last: when
	// each came and the leader's LEO then. A pipelined follower's durable
	// end trails its fetches by a flush, so the fetch it covers is an
	// earlier one than the last.
	fetches [recentFetches]fetchMark
}

// recentFetches is how many fetches a durable end is compared with. A
// follower that flushes before each fetch covers its previous fetch when it
// keeps up (Kafka's rule). A pipelined one fetches while a flush round runs
// and one more answer waits for the next round, so when it keeps up its
// durable end covers one of its last three fetches. (Each comparison that
// holds is a true statement: the follower now has durably all the leader
// had at that fetch. More would measure the lag more exactly.)
const recentFetches = 3

// fetchMark is one fetch: when it came, and the leader's LEO then.
type fetchMark struct {
	at        time.Time
	leaderLEO int64
}

// newProgress is a follower's progress before its first fetch.
func newProgress() progress {
	p := progress{leo: -1, fetched: -1}
	for i := range p.fetches {
		p.fetches[i].leaderLEO = -1
	}
	return p
}

// fetchedAt records a checked fetch at fetchOffset reporting durable, while
// the leader's LEO is leaderLEO. A durable end lower than one reported
// before in this epoch and incarnation is a report overtaken on the way (the
// follower's fetch loop and its flusher send independently), unless the
// fetch offset went below it, so the durable end is kept unless the fetch
// offset caps it.
func (p *progress) fetchedAt(fetchOffset, durable, leaderLEO int64, now time.Time) {
	p.fetched = fetchOffset
	p.setDurable(min(max(p.leo, durable), fetchOffset), leaderLEO, now)
	copy(p.fetches[:], p.fetches[1:])
	p.fetches[len(p.fetches)-1] = fetchMark{at: now, leaderLEO: leaderLEO}
}

// reportedDurable records a durable report of durable while the leader's
// LEO is leaderLEO, counted only up to the last checked fetch offset.
// advanced says it moved the durable end.
func (p *progress) reportedDurable(durable, leaderLEO int64, now time.Time) (advanced bool) {
	d := min(durable, p.fetched)
	if d <= p.leo {
		return false
	}
	p.setDurable(d, leaderLEO, now)
	return true
}

// setDurable records the follower's durable end while the leader's LEO is
// leaderLEO, and when that shows it caught up.
func (p *progress) setDurable(durable, leaderLEO int64, now time.Time) {
	if durable >= leaderLEO {
		p.lastCaughtUp = later(p.lastCaughtUp, now)
	} else {
		for _, f := range p.fetches {
			if !f.at.IsZero() && durable >= f.leaderLEO {
				p.lastCaughtUp = later(p.lastCaughtUp, f.at)
			}
		}
	}
	p.leo = durable
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
		*p = newProgress()
	}
	p.incarnation = inc
}
