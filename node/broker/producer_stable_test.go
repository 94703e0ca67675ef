package broker

import (
	"testing"
	"time"

	"paymentlog/wire"
)

// A follower moves its producer state's batches below the HW to the stable
// part (what snapshots cover and truncations never roll back) also when the
// HW arrives in an answer without records: the leader's last HW advance
// always does. It was only done on an append, with the HW from before the
// answer, so a follower's stable part stayed a response behind for as long
// as no new batch came (its periodic snapshots covered less, and a test
// waiting for a snapshot of the whole log failed under load).
func TestFollowerStableProducerStateFollowsHW(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	const n = 20
	for i := range n {
		wantOffset(t, "batch", mustProduce(t, c, wire.AcksAll, buildBatch(int64(1+i%3), int32(i/3), []string{"s"})), int64(i))
	}
	waitInSync(t, c, testKey)
	p := c.node(2).b.partition(testKey.topic, testKey.partition)
	waitFor(t, "the follower's stable producer state reaches its HW", 10*time.Second, func() bool {
		p.appendMu.Lock()
		defer p.appendMu.Unlock()
		return p.hw() == n && p.producers.stableEnd == n
	})
}
