package broker

import (
	"context"
	"testing"

	"paymentlog/wire"
)

// The broker's metrics sources: a latency observation per produce request
// by acks, error codes per partition answer, leader changes, and the
// per-partition list in topic and partition order, capped.
func TestStatsForMetrics(t *testing.T) {
	ctx := context.Background()
	c := newTestCluster(t, clusterOptions{nodes: 1})
	for p := int32(2); p >= 0; p-- {
		c.createPartition("payments", p, []int32{1}, 1, 1)
	}
	b := c.node(1).b
	batch := buildBatch(-1, -1, []string{"a", "b", "c"})
	for range 4 {
		if r, err := c.produce(ctx, tp{"payments", 1}, wire.AcksLeader, batch); err != nil || r.Err != wire.None {
			t.Fatalf("produce: %v %v", err, r.Err)
		}
	}
	if r, err := c.produce(ctx, tp{"payments", 0}, wire.AcksAll, batch); err != nil || r.Err != wire.None {
		t.Fatalf("produce: %v %v", err, r.Err)
	}
	var resp wire.ProduceResponse
	if err := c.client.Call(ctx, c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksAll, Topic: "nope",
		Parts: []wire.ProducePartition{{Partition: 0, LeaderEpoch: -1, Batch: batch}}}, &resp); err != nil {
		t.Fatal(err)
	}

	lat := b.Latencies()
	if n0, n1, nAll := lat.Produce[AcksLevelNone].Count, lat.Produce[AcksLevelLeader].Count, lat.Produce[AcksLevelAll].Count; n0 != 0 || n1 != 4 || nAll != 2 {
		t.Fatalf("produce latency counts by acks 0/1/all = %d/%d/%d, want 0/4/2", n0, n1, nAll)
	}
	// fsync always (the cluster's default): each byte is flushed once.
	if s := b.Stats(); lat.Flush.Count == 0 || s.Flushes != lat.Flush.Count || s.FlushBytes != uint64(5*len(batch)) {
		t.Fatalf("%d flushes observed, stats %d flushes of %d bytes; want >= 1 covering %d bytes", lat.Flush.Count, s.Flushes, s.FlushBytes, 5*len(batch))
	}
	errs := b.ErrorCounts()
	if len(errs) != 1 || errs[0] != (ErrorCount{Request: RequestProduce, Code: wire.UnknownTopicOrPartition, Count: 1}) {
		t.Fatalf("error counts %+v, want one UnknownTopicOrPartition for produce", errs)
	}
	if s := b.Stats(); s.LeaderChanges != 3 || s.ProduceRequests != 6 || s.LogSizeBytes < int64(5*len(batch)) {
		t.Fatalf("stats %+v: want 3 leader changes, 6 produce requests, >= %d bytes", s, 5*len(batch))
	}

	parts, total := b.PartitionStats(2)
	if total != 3 || len(parts) != 2 || parts[0].Partition != 0 || parts[1].Partition != 1 {
		t.Fatalf("PartitionStats(2) = %+v, %d; want payments-0 and payments-1 of 3", parts, total)
	}
	if p := parts[1]; p.LogEnd != 12 || p.HW != 12 || p.LogStart != 0 || p.ISR != 1 || p.Replicas != 1 || p.SizeBytes != int64(4*len(batch)) {
		t.Fatalf("payments-1 = %+v, want offsets 0..12 and 4 batches of bytes", p)
	}
	if all, total := b.PartitionStats(0); len(all) != 3 || total != 3 {
		t.Fatalf("PartitionStats(0) lists %d of %d", len(all), total)
	}
}
