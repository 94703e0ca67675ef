package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// How long the active segment stays open: the topic's segment.ms, else
// the node's roll age; max.compaction.lag.ms bounds it too (Kafka rolls
// as if segment.ms were no longer) when the topic compacts.
func TestRollAgeOf(t *testing.T) {
	for _, c := range []struct {
		node, segMs time.Duration
		pol         CleanupPolicy
		maxLag      time.Duration
		want        time.Duration
	}{
		{0, 0, CleanupDelete, 0, segment.DefaultRollAge},
		{0, 0, CleanupDelete, time.Hour, segment.DefaultRollAge}, // not compacted: the lag means nothing
		{0, 0, CleanupCompact, 0, segment.DefaultRollAge},
		{0, 0, CleanupCompact, time.Hour, time.Hour},
		{0, 0, CleanupCompactDelete, time.Hour, time.Hour},
		{0, 0, CleanupCompact, 30 * 24 * time.Hour, segment.DefaultRollAge}, // longer than the node's
		{time.Minute, 0, CleanupCompact, time.Hour, time.Minute},
		{-1, 0, CleanupCompact, time.Hour, time.Hour}, // the node never rolls by age
		{-1, 0, CleanupCompact, 0, -1},
		{0, time.Hour, CleanupDelete, 0, time.Hour},                      // segment.ms
		{time.Minute, time.Hour, CleanupDelete, 0, time.Hour},            // over the node's
		{-1, 30 * 24 * time.Hour, CleanupDelete, 0, 30 * 24 * time.Hour}, // a node that never rolls
		{0, time.Hour, CleanupCompact, time.Minute, time.Minute},         // the lag is shorter
		{0, time.Minute, CleanupCompact, time.Hour, time.Minute},         // segment.ms is shorter
	} {
		b := &Broker{cfg: Config{Log: segment.Options{RollAge: c.node}}}
		st := PartitionState{SegmentMs: c.segMs, Cleanup: c.pol, Compaction: CompactionConfig{MaxLag: c.maxLag}}
		if got := b.rollAgeOf(st); got != c.want {
			t.Errorf("node %v, segment.ms %v, %v, max lag %v: %v, want %v", c.node, c.segMs, c.pol, c.maxLag, got, c.want)
		}
	}
}

// A compacted topic with max.compaction.lag.ms set, applied to a running
// partition: its active segment is sealed at the first append once it has
// been open that long, so that its records reach the cleaner.
func TestMaxCompactionLagRollsTheActiveSegment(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	const lag = 300 * time.Millisecond
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MaxLag: lag})
	produce := func() {
		t.Helper()
		if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, rec("k", "v"))); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	start := time.Now() // before the first append opens the segment
	produce()
	waitFor(t, "the active segment sealed by max.compaction.lag.ms", 10*time.Second, func() bool {
		produce()
		return len(logOf(c, 1).Segments()) == 2
	})
	if took := time.Since(start); took < lag {
		t.Fatalf("sealed after %v, before max.compaction.lag.ms %v", took, lag)
	}
}

// A compacted partition no longer written: the cleaner seals its active
// segment once max.compaction.lag.ms has passed, so that a tombstone in it
// deletes its key's value without another append, and then removes the
// tombstone itself once delete.retention.ms has passed, with nothing dirty
// (the records' timestamps are long past both).
func TestCleanerSealsAndCleansAnIdlePartition(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, cleanerInterval: -1})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	const lag = 200 * time.Millisecond
	c.setCleanup(testKey, CleanupCompact, CompactionConfig{MaxLag: lag, DeleteRetention: time.Hour, MinDirtyRatio: 0.5})
	start := time.Now() // before the first append opens the segment
	for _, r := range []kv{rec("card-1", "4111 1111 1111 1111"), {key: []byte("card-1")}} {
		if r := mustProduce(t, c, wire.AcksAll, keyedBatch(segment.CodecNone, r)); r.Err != wire.None {
			t.Fatal(r.Err)
		}
	}
	there := func(off int64) bool {
		_, ok := readAll(t, logOf(c, 1), 2)[off]
		return ok
	}
	waitFor(t, "the idle partition's active segment sealed and the value removed", 10*time.Second, func() bool {
		c.node(1).b.CompactNow(context.Background())
		return len(logOf(c, 1).Segments()) == 2 && !there(0)
	})
	if took := time.Since(start); took < lag {
		t.Fatalf("sealed after %v, before max.compaction.lag.ms %v", took, lag)
	}
	if !there(1) {
		t.Fatal("the tombstone went in the pass that first saw it")
	}
	s := c.node(1).b.CompactNow(context.Background())
	if s.Err != nil || s.Ran != 1 || s.TombstonesRemoved != 1 || there(1) {
		t.Fatalf("the next pass, with nothing dirty: %+v; tombstone there: %v", s, there(1))
	}
	if s := c.node(1).b.CompactNow(context.Background()); s.Ran != 0 || len(logOf(c, 1).Segments()) != 2 {
		t.Fatalf("a pass with nothing to do: %+v, %d segments", s, len(logOf(c, 1).Segments()))
	}
}
