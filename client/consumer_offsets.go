package client

import (
	"context"
	"fmt"
	"time"

	"paymentlog/wire"
)

// HighWatermark returns the highest high watermark fetches reported for tp
// (-1 if none yet). It never goes backwards: a new leader whose HW has not
// yet caught up with its predecessor's reports none (KIP-207), and the last
// known one stands.
func (cs *Consumer) HighWatermark(tp TopicPartition) int64 {
	if cp, ok := cs.parts[tp]; ok {
		return cp.hw
	}
	return -1
}

// EndOffsets returns each partition's high watermark, asking the leaders.
func (cs *Consumer) EndOffsets(ctx context.Context, tps []TopicPartition) (map[TopicPartition]int64, error) {
	return cs.c.offsetsFor(ctx, tps, wire.Latest)
}

// BeginningOffsets returns each partition's log start offset, asking the leaders.
func (cs *Consumer) BeginningOffsets(ctx context.Context, tps []TopicPartition) (map[TopicPartition]int64, error) {
	return cs.c.offsetsFor(ctx, tps, wire.Earliest)
}

// OffsetsForTimes returns, for each partition, the first offset whose
// record's timestamp is at or after t (Kafka's offsetsForTimes), asking the
// leaders; -1 for a partition with no such record below its high watermark
// (seek it to SeekEnd: the records that come later are the ones after t).
// Timestamps are the records' own (the producer's Record.Timestamp, else the
// time of Produce), so with producers whose clocks disagree the answer is
// the first record stamped at or after t, not the first appended after it.
// A t before the Unix epoch is an error.
func (cs *Consumer) OffsetsForTimes(ctx context.Context, tps []TopicPartition, t time.Time) (map[TopicPartition]int64, error) {
	ts := t.UnixMilli()
	if ts < 0 {
		return nil, fmt.Errorf("client: offsets for times: %s is before 1970", t.UTC().Format(time.RFC3339))
	}
	return cs.c.offsetsFor(ctx, tps, ts)
}

func (c *Client) offsetsFor(ctx context.Context, tps []TopicPartition, ts int64) (map[TopicPartition]int64, error) {
	byTopic := map[string][]int32{}
	for _, tp := range tps {
		byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
	}
	out := make(map[TopicPartition]int64, len(tps))
	for topic, parts := range byTopic {
		offs, _, err := c.listOffsets(ctx, topic, parts, ts, true)
		if err != nil {
			return nil, err
		}
		for p, o := range offs {
			out[TopicPartition{topic, p}] = o
		}
	}
	return out, nil
}

// PartitionCount returns a topic's partition count, refreshing the metadata
// if the topic is not in the cache. A missing topic yields an error matching
// wire.UnknownTopicOrPartition, one the client's principal may not describe
// (a cluster enforcing ACLs) wire.TopicAuthorizationFailed.
func (c *Client) PartitionCount(ctx context.Context, topic string) (int, error) {
	for i := 0; i < 2; i++ {
		if i > 0 || c.meta.current() == nil {
			if err := c.meta.refresh(ctx); err != nil {
				return 0, err
			}
		}
		if t, ok := c.meta.current().topics[topic]; ok && len(t.Partitions) > 0 {
			return len(t.Partitions), nil
		}
	}
	return 0, c.missingTopic(ctx, topic)
}

// ListOffsets returns every partition's offset at a point of the topic
// (Kafka's kafka-get-offsets): at is SeekBeginning (the log start),
// SeekEnd (the high watermark) or a timestamp in Unix milliseconds (the
// first record stamped at or after it; -1 for a partition with none yet).
func (a *Admin) ListOffsets(ctx context.Context, topic string, at int64) (map[int32]int64, error) {
	parts, err := a.offsetsPartitions(ctx, topic, at)
	if err != nil {
		return nil, err
	}
	offs, _, err := a.c.listOffsets(ctx, topic, parts, at, true)
	return offs, err
}

// offsetsPartitions checks at and lists every partition of topic, for
// ListOffsets and ListOffsetsAvailable.
func (a *Admin) offsetsPartitions(ctx context.Context, topic string, at int64) ([]int32, error) {
	if at < 0 && at != SeekBeginning && at != SeekEnd {
		return nil, fmt.Errorf("client: list offsets at %d: not SeekBeginning, SeekEnd or a time in Unix ms", at)
	}
	n, err := a.c.PartitionCount(ctx, topic)
	if err != nil {
		return nil, err
	}
	parts := make([]int32, n)
	for i := range parts {
		parts[i] = int32(i)
	}
	return parts, nil
}

// ListOffsetsAvailable is ListOffsets for an operator looking at a topic
// with partitions offline: it retries failing partitions for at most wait
// (a leader election takes well under a second), then returns the offsets
// it has and, in unavailable, why each other partition has none (no
// leader: every replica is down). A failure that retrying cannot mend (an
// unknown topic, a refused request) and ctx ending are errors, as in
// ListOffsets.
func (a *Admin) ListOffsetsAvailable(ctx context.Context, topic string, at int64, wait time.Duration) (offs map[int32]int64, unavailable map[int32]error, err error) {
	parts, err := a.offsetsPartitions(ctx, topic, at)
	if err != nil {
		return nil, nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	offs, errs, err := a.c.listOffsets(wctx, topic, parts, at, true)
	if err == nil {
		return offs, nil, nil
	}
	if ctx.Err() != nil || wctx.Err() == nil {
		return nil, nil, err // ctx ended, or a failure retrying cannot mend
	}
	unavailable = map[int32]error{}
	for _, p := range parts {
		if _, ok := offs[p]; ok {
			continue
		}
		if e := errs[p]; e != nil {
			unavailable[p] = e
		} else {
			unavailable[p] = fmt.Errorf("%s/%d: no answer within %v", topic, p, wait)
		}
	}
	return offs, unavailable, nil
}

// AssignAtTime assigns each of tps (seeks it, if assigned) at its first
// record stamped at or after t (OffsetsForTimes), and at SeekEnd where no
// record is yet: the records produced from then on are. Errors are
// OffsetsForTimes's; after one, no partition has moved.
func (cs *Consumer) AssignAtTime(ctx context.Context, tps []TopicPartition, t time.Time) error {
	offs, err := cs.OffsetsForTimes(ctx, tps, t)
	if err != nil {
		return err
	}
	for _, tp := range tps {
		o, ok := offs[tp]
		if !ok || o < 0 {
			o = SeekEnd
		}
		cs.Assign([]TopicPartition{tp}, o)
	}
	return nil
}
