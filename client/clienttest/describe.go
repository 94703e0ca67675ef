package clienttest

import (
	"context"
	"slices"
	"time"

	"paymentlog/wire"
)

// describeReplica answers DescribeReplica as the broker at addr: every
// replica holds the leader's log (the fake replicates at once), in one
// segment.
func (c *Cluster) describeReplica(addr string, r *wire.DescribeReplicaRequest) *wire.DescribeReplicaResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.mu.topics[r.Topic]
	if !ok || r.Partition < 0 || int(r.Partition) >= len(t.parts) || !slices.Contains(t.parts[r.Partition].replicas, c.brokerAt(addr)) {
		return &wire.DescribeReplicaResponse{Err: wire.UnknownTopicOrPartition}
	}
	pt := t.parts[r.Partition]
	var size int64
	for _, b := range pt.batches {
		size += int64(len(b))
	}
	return &wire.DescribeReplicaResponse{LogStart: pt.logStart, LogEnd: pt.next, HighWatermark: pt.next, LeaderEpoch: pt.epoch,
		IsLeader: pt.leader == c.brokerAt(addr), Size: size, Segments: 1}
}

// describeQuorum answers DescribeQuorum: every broker a voter in term 1,
// every log at the metadata offset.
func (c *Cluster) describeQuorum() *wire.DescribeQuorumResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &wire.DescribeQuorumResponse{Term: 1, LastIndex: uint64(c.mu.moff), Commit: uint64(c.mu.moff), Applied: uint64(c.mu.moff)}
	for _, b := range c.mu.brokers {
		resp.Voters = append(resp.Voters, b.ID)
	}
	return resp
}

// offsetForTimestamp is the first offset at or above the log start whose
// record's timestamp is at least ts, or -1 (a broker's answer to a
// ListOffsets by timestamp; the fake's high watermark is its log end).
func (pt *partition) offsetForTimestamp(ts int64) int64 {
	for _, b := range pt.batches {
		if b.MaxTimestamp() < ts || b.LastOffset() < pt.logStart {
			continue
		}
		it := b.Iter()
		for it.Next() {
			if r := it.Record(); r.Timestamp >= ts && r.Offset >= pt.logStart {
				return r.Offset
			}
		}
	}
	return -1
}

// waitMetadata holds a long-poll Metadata request (WaitAbove, MaxWaitMs)
// until the metadata offset passes WaitAbove, the wait ends or ctx does, as
// a node does.
func (c *Cluster) waitMetadata(ctx context.Context, r *wire.MetadataRequest) {
	if r.MaxWaitMs <= 0 || c.IgnoreMetadataWait.Load() {
		return
	}
	deadline := time.NewTimer(time.Duration(min(r.MaxWaitMs, wire.MaxMetadataWaitMs)) * time.Millisecond)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		done, ch := c.mu.moff > r.WaitAbove, c.mu.changed
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		case <-ctx.Done():
			return
		}
	}
}
