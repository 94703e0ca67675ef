package client

import (
	"context"
	"fmt"
	"slices"
	"time"

	"paymentlog/wire"
)

// ProducerState is one idempotent producer as a partition replica
// remembers it (Kafka's DescribeProducers). JSON names are those of
// `paymentlog topic describe-producers --json`.
type ProducerState struct {
	ProducerID    int64 `json:"producer_id"`
	ProducerEpoch int16 `json:"producer_epoch"`
	// LastSequence is the last sequence number of its last batch: its
	// next batch must start at LastSequence+1 (else OutOfOrderSequence).
	LastSequence int32 `json:"last_sequence"`
	// LastTimestamp (Unix ms) is when the replica counts it last seen (its
	// largest record timestamp, or the broker's clock at the append when
	// later); -1 unknown.
	LastTimestamp int64 `json:"last_timestamp"`
	// FirstOffset and LastOffset are those of its last batch.
	FirstOffset int64 `json:"last_batch_first_offset"`
	LastOffset  int64 `json:"last_batch_last_offset"`
	// Batches is how many of its batches are remembered to answer retries
	// as duplicates (at most 5).
	Batches int `json:"batches"`
	// ExpiresInMs is how long until the replica forgets the producer if it
	// sends nothing more (then a batch other than its sequence 0 is
	// UnknownProducerID); -1 when it is not expiring (a batch above the
	// high watermark) or not known.
	ExpiresInMs int64 `json:"expires_in_ms"`
}

// PartitionProducers is the producer state of one partition, from the
// replica that answered.
type PartitionProducers struct {
	Partition int32 `json:"partition"`
	// Broker is the broker whose replica answered (-1: none did).
	Broker int32 `json:"broker"`
	// Leader: that replica leads the partition.
	Leader bool `json:"leader"`
	// ExpirationMs is the replica's producer id expiration
	// (--producer-id-expiration).
	ExpirationMs int64           `json:"producer_id_expiration_ms"`
	Producers    []ProducerState `json:"producers"`
	// Omitted counts producers not listed (an answer lists at most
	// wire.MaxDescribedProducers).
	Omitted int `json:"omitted,omitempty"`
	// Error is why the partition has no state listed ("" when it has):
	// no leader, no replica on the broker asked, or a state that could not
	// be rebuilt. Err is the same as an error.
	Error string `json:"error,omitempty"`
	Err   error  `json:"-"`
}

// DescribeProducersOptions chooses the partitions and replicas asked.
type DescribeProducersOptions struct {
	// Partitions to describe (nil: every partition of the topic; with
	// Broker, every one it holds a replica of).
	Partitions []int32
	// Broker, when set (> 0), asks that broker for its own replicas,
	// leader or follower (Kafka's --broker-id); otherwise each partition's
	// leader is asked.
	Broker int32
}

// describeProducersLeaderWait is how long DescribeProducers retries a
// partition without a leader (or whose leader moved) before it reports it.
const describeProducersLeaderWait = 3 * time.Second

// DescribeProducers lists, for partitions of topic, the idempotent producers
// their leaders (or opts.Broker's replicas) remember: producer id and epoch,
// last sequence, last timestamp, last batch's offsets, batches remembered
// and time to expiry (Kafka's describeProducers). Partitions come back in
// order, each with its state or its Error; the error returned is for the
// whole request (an unknown topic or partition, a refusal, an unknown
// broker).
func (a *Admin) DescribeProducers(ctx context.Context, topic string, opts DescribeProducersOptions) ([]PartitionProducers, error) {
	n, err := a.c.PartitionCount(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, p := range opts.Partitions {
		if p < 0 || int(p) >= n {
			return nil, wire.UnknownTopicOrPartition.Err(fmt.Sprintf("partition %d of topic %q does not exist (%d partitions)", p, topic, n))
		}
	}
	if opts.Broker > 0 {
		return a.describeReplicaProducers(ctx, topic, opts)
	}
	parts := opts.Partitions
	if parts == nil {
		for p := range int32(n) {
			parts = append(parts, p)
		}
	}
	return a.describeLeaderProducers(ctx, topic, parts)
}

// describeReplicaProducers asks opts.Broker for its replicas' state.
func (a *Admin) describeReplicaProducers(ctx context.Context, topic string, opts DescribeProducersOptions) ([]PartitionProducers, error) {
	addr, ok := a.c.meta.current().addr(opts.Broker)
	if !ok {
		return nil, fmt.Errorf("client: broker %d is not registered", opts.Broker)
	}
	cctx, cancel := context.WithTimeout(ctx, a.c.cfg.RequestTimeout)
	defer cancel()
	var resp wire.DescribeProducersResponse
	req := &wire.DescribeProducersRequest{Topic: topic, Partitions: opts.Partitions, AnyReplica: true}
	if err := a.c.call(cctx, addr, wire.TypeDescribeProducers, req, &resp); err != nil {
		return nil, fmt.Errorf("broker %d at %s: %w", opts.Broker, addr, err)
	}
	if resp.Err != wire.None {
		return nil, resp.Err.Err(resp.Message)
	}
	out := make([]PartitionProducers, len(resp.Parts))
	for i, pr := range resp.Parts {
		out[i] = partitionProducers(topic, opts.Broker, addr, pr)
	}
	slices.SortFunc(out, func(x, y PartitionProducers) int { return int(x.Partition - y.Partition) })
	return out, nil
}

// describeLeaderProducers asks each partition's leader, retrying for
// describeProducersLeaderWait those whose leader is unknown, moved or has
// not opened the partition yet; not a state that could not be rebuilt
// (KafkaStorageError), which lasts until the broker restarts.
func (a *Admin) describeLeaderProducers(ctx context.Context, topic string, parts []int32) ([]PartitionProducers, error) {
	c := a.c
	got := make(map[int32]PartitionProducers, len(parts))
	errs := map[int32]error{}
	todo := slices.Clone(parts)
	deadline := time.Now().Add(describeProducersLeaderWait)
	for backoff := 25 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		failed, err := askLeaders(ctx, c, topic, todo, got, errs, func(cctx context.Context, addr string, ps []int32) (map[int32]PartitionProducers, map[int32]error, error) {
			var resp wire.DescribeProducersResponse
			if err := c.call(cctx, addr, wire.TypeDescribeProducers, &wire.DescribeProducersRequest{Topic: topic, Partitions: ps}, &resp); err != nil {
				return nil, nil, err
			}
			if resp.Err != wire.None {
				return nil, nil, resp.Err.Err(resp.Message)
			}
			vals, perrs := map[int32]PartitionProducers{}, map[int32]error{}
			broker := brokerAt(c.meta.current(), addr)
			for _, pr := range resp.Parts {
				pp := partitionProducers(topic, broker, addr, pr)
				if pr.Err.Retriable() && pr.Err != wire.KafkaStorageError { // moved, or not yet opened there
					perrs[pr.Partition] = pp.Err
					continue
				}
				vals[pr.Partition] = pp
			}
			return vals, perrs, nil
		})
		if err != nil {
			return nil, err
		}
		for _, p := range failed {
			if code := ErrorCode(errs[p]); code == wire.TopicAuthorizationFailed {
				return nil, errs[p]
			}
		}
		todo = failed
		if len(todo) == 0 || time.Now().After(deadline) {
			break
		}
		if err := c.meta.refresh(ctx); err != nil && ctx.Err() != nil {
			return nil, firstErr(errs, todo, ctx.Err())
		}
		if err := sleepCtx(ctx, backoff); err != nil {
			return nil, firstErr(errs, todo, err)
		}
	}
	out := make([]PartitionProducers, 0, len(parts))
	for _, p := range parts {
		pp, ok := got[p]
		if !ok {
			e := errs[p]
			if e == nil {
				e = wire.LeaderNotAvailable.Err(fmt.Sprintf("%s/%d has no leader", topic, p))
			}
			pp = PartitionProducers{Partition: p, Broker: -1, Error: e.Error(), Err: e}
		}
		out = append(out, pp)
	}
	return out, nil
}

// partitionProducers converts one partition's answer from broker (at addr).
func partitionProducers(topic string, broker int32, addr string, pr wire.DescribeProducersPartition) PartitionProducers {
	pp := PartitionProducers{Partition: pr.Partition, Broker: broker, Leader: pr.IsLeader, ExpirationMs: pr.ExpirationMs,
		Producers: make([]ProducerState, len(pr.Producers)), Omitted: int(pr.Omitted)}
	if pr.Err != wire.None {
		msg := pr.Message
		if msg == "" {
			msg = fmt.Sprintf("%s/%d at %s", topic, pr.Partition, addr)
		}
		if pr.Err == wire.NotLeader && pr.LeaderHint >= 0 {
			msg += fmt.Sprintf(" (leader: broker %d)", pr.LeaderHint)
		}
		pp.Err = pr.Err.Err(msg)
		pp.Error = pp.Err.Error()
	}
	for i, s := range pr.Producers {
		pp.Producers[i] = ProducerState{ProducerID: s.ProducerID, ProducerEpoch: s.ProducerEpoch, LastSequence: s.LastSequence,
			LastTimestamp: s.LastTimestamp, FirstOffset: s.FirstOffset, LastOffset: s.LastOffset, Batches: int(s.Batches), ExpiresInMs: s.ExpiresInMs}
	}
	return pp
}

// brokerAt is the id of the broker at addr in s, -1 if none.
func brokerAt(s *snapshot, addr string) int32 {
	if s != nil {
		for id, b := range s.brokers {
			if b.Addr == addr {
				return id
			}
		}
	}
	return -1
}
