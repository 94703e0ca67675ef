package broker

import (
	"context"
	"time"
)

// Producer id expiry (Kafka's producer.id.expiration.ms): a partition
// forgets a producer id whose newest batch's largest record timestamp is
// Config.ProducerIDExpiration or more older than the broker's clock, unless
// it has a batch above the HW still (pending). Without it every producer id
// ever used stayed in memory, and in every producer snapshot, for as long as
// the partition lived. A forgotten producer that comes back is a new one: a
// batch at sequence 0 is accepted, any other is OutOfOrderSequence, as Kafka
// answers an unknown producer id. Each replica expires on its own clock, as
// Kafka's do; the checks run with the retention passes
// (Config.RetentionCheckInterval).

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
