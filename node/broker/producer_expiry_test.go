package broker

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node/replica"
	"paymentlog/segment"
	"paymentlog/wire"
)

// buildBatchAt is buildBatch with the records' timestamp.
func buildBatchAt(pid int64, seq int32, ts time.Time, vals ...string) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{ProducerID: pid, BaseSequence: seq})
	for _, v := range vals {
		bd.Add(ts.UnixMilli(), nil, []byte(v), nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// TestIdleProducerIDsExpire: a producer id whose last batch is older than
// Config.ProducerIDExpiration (by the broker's clock) is forgotten: its
// retry is then UnknownProducerID and it may start again at sequence 0,
// while a younger producer is still deduplicated. The last timestamps
// survive a restart (producer snapshot, version 2), so the younger one
// expires on time afterwards too.
func TestIdleProducerIDsExpire(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	var clock atomic.Int64
	clock.Store(t0.UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 50 * time.Millisecond, now: now})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	old := [][]byte{buildBatchAt(5, 0, t0, "a"), buildBatchAt(5, 1, t0, "b")}
	young := buildBatchAt(6, 0, t0.Add(23*time.Hour), "c")
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, old[0]), 0)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, old[1]), 1)
	wantOffset(t, "producer 6", mustProduce(t, c, wire.AcksAll, young), 2)

	clock.Store(t0.Add(23 * time.Hour).UnixMilli())
	if n := c.node(1).b.ExpireProducers(context.Background()); n != 0 {
		t.Fatalf("expired %d producers before a day passed", n)
	}
	clock.Store(t0.Add(24 * time.Hour).UnixMilli())
	if n := c.node(1).b.ExpireProducers(context.Background()); n != 1 {
		t.Fatalf("expired %d producers a day after producer 5's last batch, want 1", n)
	}
	if r := mustProduce(t, c, wire.AcksAll, old[1]); r.Err != wire.UnknownProducerID {
		t.Fatalf("retry of an expired producer: %v at %d, want UnknownProducerID", r.Err, r.BaseOffset)
	}
	wantOffset(t, "retry of the young producer", mustProduce(t, c, wire.AcksAll, young), 2)

	dir := c.node(1).dir
	c.stopNode(1) // a clean close writes the producer snapshot
	c.startNode(1, dir)
	c.push(testKey)
	waitFor(t, "node 1 leads again", 10*time.Second, func() bool {
		_, _, _, ok := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return ok && c.node(1).b.partition(testKey.topic, testKey.partition).checkLeadership(1) == replica.OK
	})
	if n := c.node(1).b.ExpireProducers(context.Background()); n != 0 {
		t.Fatalf("expired %d producers right after the restart", n)
	}
	wantOffset(t, "retry of the young producer after the restart", mustProduce(t, c, wire.AcksAll, young), 2)
	clock.Store(t0.Add(47 * time.Hour).UnixMilli())
	if n := c.node(1).b.ExpireProducers(context.Background()); n != 1 {
		t.Fatalf("expired %d producers a day after producer 6's last batch, want 1", n)
	}
	if n := c.node(1).b.Stats().ProducerIDsExpired; n != 1 { // the counter restarts with the process
		t.Fatalf("ProducerIDsExpired %d since the restart, want 1", n)
	}
	wantOffset(t, "producer 5 starting again at 0", mustProduce(t, c, wire.AcksAll, buildBatchAt(5, 0, now(), "d")), 3)
}

// TestProducerWithOldRecordTimestampsIsNotForgotten: records stamped with
// when the payment happened, two days back (a backfill), do not make their
// producer id expire while it produces: expiry counts from when the replica
// saw its last batch. Counting from the record timestamps, as Kafka does,
// forgot it at the first expiry pass, and a retry of its last batch across
// that pass was refused as unknown (the client then resends it as a new
// batch: written twice).
func TestProducerWithOldRecordTimestampsIsNotForgotten(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	var clock atomic.Int64
	clock.Store(t0.UnixMilli())
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, lagTime: 100 * time.Hour, now: now})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	paid := t0.Add(-48 * time.Hour)
	last := buildBatchAt(5, 1, paid, "b")
	wantOffset(t, "backfilled payment", mustProduce(t, c, wire.AcksAll, buildBatchAt(5, 0, paid, "a")), 0)
	wantOffset(t, "backfilled payment", mustProduce(t, c, wire.AcksAll, last), 1)
	waitInSync(t, c, testKey)

	clock.Store(t0.Add(time.Hour).UnixMilli())
	for _, n := range c.liveNodes() {
		if got := n.b.ExpireProducers(context.Background()); got != 0 {
			t.Fatalf("node %d forgot %d producers an hour after their last batch", n.id, got)
		}
	}
	wantOffset(t, "retry of the last payment after an expiry pass", mustProduce(t, c, wire.AcksAll, last), 1)
	c.electNode(testKey, 2) // the follower remembers it as well
	wantOffset(t, "retry on the new leader", mustProduce(t, c, wire.AcksAll, last), 1)

	clock.Store(t0.Add(25 * time.Hour).UnixMilli())
	for _, n := range c.liveNodes() {
		if got := n.b.ExpireProducers(context.Background()); got != 1 {
			t.Fatalf("node %d forgot %d producers a day after their last batch, want 1", n.id, got)
		}
	}
}
