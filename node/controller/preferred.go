package controller

import (
	"time"

	"paymentlog/node/metadata"
)

// DefaultPreferredLeaderDelay is how long a partition's preferred replica
// must have been back in its ISR before the controller moves the
// leadership back to it (Config.PreferredLeaderDelay).
//
// Why 2 s: every move costs the writers a stall, whatever its timing
// (requests in flight to the old leader refused, its uncommitted tail
// truncated and resent, clients refreshing their metadata). In a rolling
// restart a node was handed its leaderships back the moment it rejoined
// the ISR, which is when the roll stops the next node, whose controlled
// shutdown then moved leaderships again. Held for longer than a restart
// takes here (a controlled shutdown of about 100 ms and start to ready of
// 0.3-1 s under load), a rolled node gets them back once the next restart
// is over, and a partition changes leader fewer times in the whole roll.
// Measured (README, Benchmarks: rolling), 2 s did better than no delay and
// than 500 ms, which came out worse than no delay: it ran out in the
// middle of the next restart. A node that rejoins and is fenced again soon
// (a flapping disk or network) never gets leaderships to lose either.
// Kafka waits for its imbalance check (leader.imbalance.check.interval.
// seconds, 300 s by default); 2 s keeps a single restart's imbalance short.
const DefaultPreferredLeaderDelay = 2 * time.Second

// preferredWait holds preferred-leader election back (see
// metadata.DecidePreferredLeadersIf). A partition's preferred replica may
// take its leadership back only once this controller has seen it waiting
// (metadata.PreferredWaiting) for at least the delay, the same broker
// incarnation all along, and that broker has reported in a heartbeat that
// it applied the metadata up to where this controller first saw it
// waiting, which includes the change that put it back in the ISR: it
// learns of its new leadership from the next entries, not from ones it is
// still catching up on. And it must still be keeping up with the log at
// its latest heartbeat (sessions.keepingUp): a node that restarted, caught
// up and then lost most of its inbound traffic (a failing link) would
// otherwise be handed leaderships it never hears of, and their writers
// would stop until its link recovered (seen in chaos: 5.4 s).
//
// It is pure: time and the image come in as arguments. Not safe for
// concurrent use (Controller guards it with mu).
type preferredWait struct {
	delay time.Duration
	m     map[partitionRef]preferredSeen
}

type partitionRef struct {
	topicID   string
	partition int32
}

// preferredSeen is when, and as of which metadata offset, this controller
// first saw a partition's preferred replica (that incarnation) waiting.
type preferredSeen struct {
	replica     int32
	incarnation int64
	since       time.Time
	offset      uint64
}

func newPreferredWait(delay time.Duration) *preferredWait {
	return &preferredWait{delay: delay, m: map[partitionRef]preferredSeen{}}
}

// observe records the partitions of img whose preferred replica is waiting
// (from now, as of img's offset, when first seen) and forgets the others.
func (w *preferredWait) observe(img *metadata.Image, now time.Time) {
	seen := make(map[partitionRef]bool, len(w.m))
	img.EachPartition(func(p metadata.PartitionState) bool {
		if !metadata.PreferredWaiting(img, p) {
			return true
		}
		k := partitionRef{p.TopicID, p.Partition}
		seen[k] = true
		b, _ := img.Broker(p.Preferred())
		if s, ok := w.m[k]; ok && s.replica == b.ID && s.incarnation == b.Incarnation {
			return true
		}
		w.m[k] = preferredSeen{replica: b.ID, incarnation: b.Incarnation, since: now, offset: img.Offset()}
		return true
	})
	for k := range w.m {
		if !seen[k] {
			delete(w.m, k)
		}
	}
}

// progressFunc tells how far broker id's incarnation has applied the
// metadata log: the offset it last reported, whether it keeps up with the
// log now, and ok false when it reported none.
type progressFunc func(id int32, incarnation int64) (applied uint64, keepingUp, ok bool)

// ready reports whether p's preferred replica may lead p again at now:
// observed waiting for at least the delay, and its broker's incarnation
// has reported applying the metadata up to where it was first seen so and
// keeps up with it (progress).
func (w *preferredWait) ready(img *metadata.Image, p metadata.PartitionState, now time.Time, progress progressFunc) bool {
	s, ok := w.m[partitionRef{p.TopicID, p.Partition}]
	if !ok || s.replica != p.Preferred() {
		return false
	}
	if b, ok := img.Broker(s.replica); !ok || b.Incarnation != s.incarnation {
		return false
	}
	if now.Sub(s.since) < w.delay {
		return false
	}
	off, keepingUp, ok := progress(s.replica, s.incarnation)
	return ok && keepingUp && off >= s.offset
}

// readySet returns the partitions of img whose preferred replica may lead
// them again at now (ready), each with that replica, after observing img.
func (w *preferredWait) readySet(img *metadata.Image, now time.Time, progress progressFunc) map[partitionRef]int32 {
	w.observe(img, now)
	var out map[partitionRef]int32
	img.EachPartition(func(p metadata.PartitionState) bool {
		if metadata.PreferredWaiting(img, p) && w.ready(img, p, now, progress) {
			if out == nil {
				out = map[partitionRef]int32{}
			}
			out[partitionRef{p.TopicID, p.Partition}] = p.Preferred()
		}
		return true
	})
	return out
}

// clear forgets everything (this controller's tenure ended or began).
func (w *preferredWait) clear() { w.m = map[partitionRef]preferredSeen{} }
