package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// BenchmarkProduceLeaderPath is the leader's produce path without the
// network (the cheapest path, so the one where instrumentation weighs the
// most): one partition, one replica, acks=1, a 16 × 100-byte batch per
// request, on the OS file system. "bare" runs what handleProduce runs
// after decoding (produceOne and its wait); "instrumented" adds exactly
// what the metrics add per request (a clock read before, counters.produced
// after). The per-flush hook runs in both (it is the log's), and is measured
// apart by BenchmarkFlushInstrumentation.
func BenchmarkProduceLeaderPath(b *testing.B) {
	for _, pol := range []struct {
		name string
		sync segment.SyncPolicy
	}{{"fsync=never", segment.SyncNever}, {"fsync=always", segment.SyncAlways}} {
		for _, instrumented := range []bool{false, true} {
			name := pol.name + "/bare"
			if instrumented {
				name = pol.name + "/instrumented"
			}
			b.Run(name, func(b *testing.B) {
				c := newTestCluster(b, clusterOptions{nodes: 1, sync: pol.sync, segBytes: 256 << 20})
				c.createPartition("payments", 0, []int32{1}, 1, 1)
				br := c.node(1).b
				vals := make([]string, 16)
				for i := range vals {
					vals[i] = fmt.Sprintf("%0100d", i)
				}
				batch := buildBatch(-1, -1, vals)
				ctx := context.Background()
				parts := []wire.ProducePartitionResponse{{}}
				pp := wire.ProducePartition{Partition: 0, LeaderEpoch: -1, Batch: batch}
				b.SetBytes(int64(len(batch)))
				for b.Loop() {
					var start time.Time
					if instrumented {
						start = time.Now()
					}
					if wait := br.produceOne(ctx, wire.AcksLeader, "payments", &pp, &parts[0]); wait != nil {
						wait()
					}
					if parts[0].Err != wire.None {
						b.Fatalf("produce: %v", parts[0].Err)
					}
					if instrumented {
						br.counters.produced(wire.AcksLeader, start, parts)
					}
				}
			})
		}
	}
}

// BenchmarkRequestInstrumentation is what the metrics add to one produce
// request of one partition: a clock read at the start, then
// counters.produced (a clock read, a histogram observation, an error-code
// check).
func BenchmarkRequestInstrumentation(b *testing.B) {
	var c counters
	parts := []wire.ProducePartitionResponse{{}}
	for b.Loop() {
		start := time.Now()
		c.produced(wire.AcksAll, start, parts)
	}
}

// BenchmarkFlushInstrumentation is what the metrics add to one group-commit
// flush: segment's two clock reads and the broker's onFlush (a histogram
// observation and an atomic add).
func BenchmarkFlushInstrumentation(b *testing.B) {
	var c counters
	fn := c.onFlush(nil)
	for b.Loop() {
		start := time.Now()
		fn(time.Since(start), 4096)
	}
}
