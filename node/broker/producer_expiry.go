package broker

import (
	"context"
	"time"

	"paymentlog/segment"
)

// Producer id expiry (Kafka's producer.id.expiration.ms): a partition
// forgets a producer id whose newest batch it appended (or copied, or
// replayed at open) Config.ProducerIDExpiration or more ago by its own
// clock, unless it has a batch above the HW still (pending). Kafka counts
// from the batch's largest record timestamp, which the producer sets: a
// payment service that stamps records with when the payment happened
// (a backfill of yesterday's settlement file) had its producer id
// forgotten at every expiry pass while it was still producing, and a
// batch retried across such a pass (its answer lost to a leader change)
// was refused as unknown and resent by the client as a new batch: written
// twice. The time kept (lastTs) is the later of the record timestamp and
// the broker's clock when it saw the batch (seenAt); a replay at open
// cannot know when a batch was appended and counts it as seen then, which
// only keeps an idle producer id up to one more ProducerIDExpiration.
//
// Without expiry every producer id ever used stayed in memory, and in every
// producer snapshot, for as long as the partition lived. A forgotten producer that comes back is a new one: a
// batch at sequence 0 is accepted, any other is UnknownProducerID (Kafka's
// UNKNOWN_PRODUCER_ID since KIP-360; it was OutOfOrderSequence, which the
// client retried three times with backoffs before it restarted its
// sequence). The client restarts at once: the batch and those after it go
// out again under the next producer epoch from sequence 0. Each replica
// expires on its own clock, as Kafka's do; the checks run with the
// retention passes (Config.RetentionCheckInterval).
//
// Why answering UnknownProducerID cannot write a batch twice or move an
// acknowledged one (the client resends the refused batch as a new one):
//
//   - The answer is given only when this leader has no entry for the
//     producer id at all (producerState.check); a gap in a known producer's
//     sequence stays OutOfOrderSequence, and a state that could not be
//     rebuilt is a retriable StorageError (seqUnknown), never this.
//   - Every batch in this replica's log went through producerState.update
//     (appended as leader, copied as follower, replayed at open, or read
//     from a snapshot taken before retention deleted it), so the replica
//     has an entry for every producer id with a batch in its log, unless
//     the entry expired. So the refused batch is not in this leader's log,
//     unless it expired: this replica saw the producer's last batch a
//     whole ProducerIDExpiration ago (seenAt), while the client retries a
//     batch only within its delivery timeout (2 minutes by default) of
//     producing it. Only a broker clock that jumps a day ahead gets
//     there.
//   - A batch not in this leader's log is not committed: a committed batch
//     is on every ISR member and the leader was elected from the ISR. A
//     previous leader's copy (its answer lost, then its leadership) was not
//     acknowledged with acks=all, and that replica truncates it away when it
//     follows this leader. The resent batch gets this leader's offset, the
//     only one it is ever acknowledged at.
//   - The client restarts only once none of its requests is outstanding.
//     A request it abandoned (the leader moved) that still arrives is
//     refused: InvalidProducerEpoch after the new epoch's first batch,
//     UnknownProducerID before it. The one exception, the old epoch's
//     sequence 0, is the producer's very first batch: the client resends
//     it under the old identity before any batch of the new epoch, and
//     the leader answers that retry as a duplicate.
//
// What this does not cover, as in Kafka: a previous leader that keeps an
// unacknowledged copy of the batch and becomes leader again before it
// follows this one (two leader changes within one retry) has both copies.
// The client's OutOfOrderSequence path restarted the sequence the same way.

// expire removes the producers idle since before nowMs-ttlMs and returns how
// many. One whose idle time is not known (lastTs -1, from a version 1
// snapshot) counts as active now.
func (s *producerState) expire(nowMs, ttlMs int64) int {
	if s.unknown != nil {
		return 0
	}
	busy := make(map[int64]bool)
	for _, b := range s.pending {
		busy[b.pid] = true
	}
	n := 0
	for pid, e := range s.producers {
		if busy[pid] {
			continue
		}
		if e.lastTs < 0 {
			e.lastTs = nowMs
			if st := s.stable[pid]; st != nil {
				st.lastTs = nowMs
			}
			continue
		}
		if nowMs-e.lastTs >= ttlMs {
			delete(s.producers, pid)
			delete(s.stable, pid)
			n++
		}
	}
	return n
}

// seenAt is the time a batch counts as last seen for expiry: its largest
// record timestamp, or now (the broker's clock when it appends, copies or
// replays the batch) when that is later.
func seenAt(h segment.Header, now time.Time) int64 {
	return max(h.MaxTimestamp, now.UnixMilli())
}

// ExpireProducers forgets, on every partition, the producer ids idle for
// Config.ProducerIDExpiration at Config.Now, and returns how many.
func (b *Broker) ExpireProducers(ctx context.Context) int {
	now := b.cfg.Now()
	n := 0
	for _, p := range b.partitions() {
		if ctx.Err() != nil {
			break
		}
		n += p.expireProducers(now, b.cfg.ProducerIDExpiration)
	}
	return n
}

func (p *partition) expireProducers(now time.Time, ttl time.Duration) int {
	p.appendMu.Lock()
	// Batches below the HW leave pending (which expiry skips) first.
	p.producers.advance(p.hw())
	n := p.producers.expire(now.UnixMilli(), ttl.Milliseconds())
	p.appendMu.Unlock()
	p.b.counters.producerIDsExpired.Add(uint64(n))
	if n > 0 {
		p.lg.Info("expired idle producer ids", "count", n, "expiration", ttl)
	}
	return n
}
