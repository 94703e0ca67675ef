package broker

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/wire"
)

// handleDescribeProducers answers a DescribeProducersRequest (Kafka's
// DescribeProducers): for each partition asked for, the idempotent
// producers its local replica remembers, if it leads (or whatever its
// role, with AnyReplica). Needs describe on the topic, like DescribeReplica.
func (b *Broker) handleDescribeProducers(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
	var req wire.DescribeProducersRequest
	if err := fr.Decode(&req); err != nil {
		return 0, nil, err
	}
	if len(req.Partitions) > wire.MaxDescribeProducersParts {
		return wire.TypeDescribeProducers, wire.DescribeProducersResponse{Err: wire.InvalidRequest,
			Message: fmt.Sprintf("describe producers of %d partitions, at most %d", len(req.Partitions), wire.MaxDescribeProducersParts)}, nil
	}
	if e := b.authorize(peer, wire.OpDescribe, req.Topic); e != nil {
		return wire.TypeDescribeProducers, wire.DescribeProducersResponse{Err: e.Code, Message: e.Message}, nil
	}
	parts, held := req.Partitions, len(req.Partitions) == 0
	if held {
		parts = b.topicPartitions(req.Topic)
	}
	resp := wire.DescribeProducersResponse{Parts: make([]wire.DescribeProducersPartition, 0, len(parts))}
	now, ttl := b.cfg.Now(), b.cfg.ProducerIDExpiration
	budget := wire.MaxDescribedProducers
	for _, pn := range parts {
		out := wire.DescribeProducersPartition{Partition: pn, LeaderHint: -1, ExpirationMs: ttl.Milliseconds()}
		if p := b.clientPartition(req.Topic, pn); p == nil {
			if held {
				continue // of a deleted or re-created topic (or closed since topicPartitions): not held
			}
			out.Err = wire.UnknownTopicOrPartition
			out.Message = fmt.Sprintf("node %d holds no replica of %s/%d", b.cfg.NodeID, req.Topic, pn)
		} else {
			p.describeProducers(&out, req.AnyReplica, now, ttl, budget)
		}
		if held && out.Err == wire.NotLeader {
			continue // every partition led here: not this one
		}
		budget -= len(out.Producers)
		resp.Parts = append(resp.Parts, out)
	}
	return wire.TypeDescribeProducers, resp, nil
}

// topicPartitions is the partitions of topic this node holds a replica
// of, in order.
func (b *Broker) topicPartitions(topic string) []int32 {
	var out []int32
	for _, p := range b.partitions() {
		if p.key.topic == topic {
			out = append(out, p.key.partition)
		}
	}
	slices.Sort(out)
	return out
}

// describeProducers fills out with the partition's producer state, unless
// the replica does not lead and anyReplica is false: at most budget
// producers, those of the lowest ids, the rest counted in out.Omitted. It
// holds appendMu only to copy the state (no I/O), and copies none once the
// response's budget is spent (budget 0).
func (p *partition) describeProducers(out *wire.DescribeProducersPartition, anyReplica bool, now time.Time, ttl time.Duration, budget int) {
	p.appendMu.Lock()
	p.mu.Lock()
	code := p.mu.r.CheckEpoch(-1)
	if p.mu.stopped {
		code = replica.NotLeader
	}
	out.LeaderHint, out.IsLeader = p.mu.r.Leader(), code == replica.OK
	hw := p.mu.r.HW()
	p.mu.Unlock()
	var unknown error
	if code == replica.OK || anyReplica {
		unknown = p.producers.unknown
		if budget > 0 {
			out.Producers = p.producers.describe(now.UnixMilli(), ttl.Milliseconds(), hw)
		} else if unknown == nil {
			out.Omitted = int32(len(p.producers.producers))
		}
	}
	p.appendMu.Unlock()
	switch {
	case code != replica.OK && !anyReplica:
		out.Err = codeToWire(code)
	case unknown != nil:
		out.Err = wire.KafkaStorageError
		out.Message = fmt.Sprintf("producer state of %s/%d unknown: not rebuilt after a truncation (%v); idempotent batches are refused until a restart replays the log",
			p.key.topic, p.key.partition, unknown)
	}
	slices.SortFunc(out.Producers, func(a, b wire.ProducerState) int { return cmp.Compare(a.ProducerID, b.ProducerID) })
	if n := len(out.Producers); n > budget {
		out.Omitted = int32(n - budget)
		out.Producers = out.Producers[:budget]
	}
}

// describe lists the producers of s (unsorted) as of nowMs, with their
// time to expiry after ttlMs: none for one with a batch at or above hw
// (expire skips it) or whose last timestamp is unknown. Empty when the
// state is unknown.
func (s *producerState) describe(nowMs, ttlMs, hw int64) []wire.ProducerState {
	if s.unknown != nil {
		return nil
	}
	busy := make(map[int64]bool)
	for _, b := range s.pending {
		if b.lastOffset() >= hw {
			busy[b.pid] = true
		}
	}
	out := make([]wire.ProducerState, 0, len(s.producers))
	for pid, e := range s.producers {
		ps := wire.ProducerState{ProducerID: pid, ProducerEpoch: e.epoch, LastTimestamp: e.lastTs,
			LastSequence: -1, FirstOffset: -1, LastOffset: -1, Batches: int32(len(e.batches)), ExpiresInMs: -1}
		if n := len(e.batches); n > 0 {
			last := e.batches[n-1]
			ps.LastSequence, ps.FirstOffset, ps.LastOffset = last.lastSeq, last.baseOffset, last.lastOffset
		}
		if !busy[pid] && e.lastTs >= 0 {
			ps.ExpiresInMs = max(e.lastTs+ttlMs-nowMs, 0)
		}
		out = append(out, ps)
	}
	return out
}
