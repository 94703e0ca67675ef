package broker

import (
	"testing"
	"time"

	"paymentlog/wire"
)

// TestProduceAnswersByItsTimeoutWhileItsFlushIsStuck: an acks=all produce
// whose own WaitDurable started the leader's flush, and that flush is stuck
// (fsync always), answers Timeout once the request's timeout passes: the
// client learns the outcome is unknown on time. It used to answer only when
// the fsync returned. The flush is not abandoned: once it completes the
// leader counts the batch toward the HW as usual.
func TestProduceAnswersByItsTimeoutWhileItsFlushIsStuck(t *testing.T) {
	c := newTestCluster(t, clusterOptions{memFS: true, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)
	leader := c.node(c.state(testKey).Leader)
	gate := gateSyncs(t, leader.fs, "payments-0")
	gate.arm()

	answered := c.produceAsync(testKey, wire.AcksAll, 300, 30*time.Second, buildBatch(-1, -1, []string{"b"}))
	gate.waitBlocked(t, "the leader never flushed b")
	select {
	case a := <-answered:
		if a.err != nil || a.r.Err != wire.Timeout {
			t.Fatalf("produce answered %+v, %v after %v; want Timeout", a.r, a.err, a.in)
		}
		t.Logf("answered %s after %v with the flush stuck", a.r.Err, a.in.Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("no answer 5 s into a 300 ms produce while its flush is stuck")
	}

	gate.open()
	waitFor(t, "the leader's HW covers b once the flush completes", 10*time.Second, func() bool {
		hw, _, _, _ := leader.b.PartitionInfo(testKey.topic, testKey.partition)
		return hw == 2
	})
}
