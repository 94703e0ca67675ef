package broker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// BenchmarkProduceReplicated measures produce throughput through three
// in-process brokers on real QUIC over loopback (RF 3, min ISR 2), 1 KiB
// records in 16-record batches, 8 requests in flight. Each iteration writes
// one batch with acks=1 (the baseline: the leader's append only) and one
// with acks=all; it reports both rates and their ratio, the price of waiting
// for the followers.
func BenchmarkProduceReplicated(b *testing.B) {
	for _, pol := range []struct {
		name string
		sync segment.SyncPolicy
	}{{"fsync=never", segment.SyncNever}, {"fsync=always", segment.SyncAlways}} {
		b.Run(pol.name, func(b *testing.B) {
			c := newTestCluster(b, clusterOptions{sync: pol.sync, segBytes: 64 << 20, maxWait: 100 * time.Millisecond})
			c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
			vals := make([]string, 16)
			for i := range vals {
				vals[i] = fmt.Sprintf("%01024d", i)
			}
			batch := buildBatch(-1, -1, vals)
			run := func(acks int8, n int) time.Duration {
				const inflight = 8
				var wg sync.WaitGroup
				work := make(chan struct{}, n)
				for range n {
					work <- struct{}{}
				}
				close(work)
				start := time.Now()
				for range inflight {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range work {
							r, err := c.produce(context.Background(), testKey, acks, batch)
							if err != nil || r.Err != wire.None {
								b.Errorf("produce: %v %v", err, r.Err)
								return
							}
						}
					}()
				}
				wg.Wait()
				return time.Since(start)
			}
			run(wire.AcksAll, 64) // warm up connections and sessions
			b.ResetTimer()
			t1 := run(wire.AcksLeader, b.N)
			tAll := run(wire.AcksAll, b.N)
			b.StopTimer()
			bytes := float64(b.N * len(batch))
			b.ReportMetric(bytes/t1.Seconds()/1e6, "MB/s-acks1")
			b.ReportMetric(bytes/tAll.Seconds()/1e6, "MB/s-acksall")
			b.ReportMetric(float64(b.N*len(vals))/tAll.Seconds(), "records/s-acksall")
			b.ReportMetric(t1.Seconds()/tAll.Seconds(), "acksall/acks1")
		})
	}
}
