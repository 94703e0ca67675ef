package broker

import (
	"slices"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestParkedProduceAnsweredNotEnoughReplicasAfterAppend: an acks=all
// produce appended and parked for the HW is answered
// NotEnoughReplicasAfterAppend as soon as the committed ISR falls below the
// minimum ISR (the HW cannot reach it), not at its request timeout. The
// batch stays in the leader's log: the producer treats the outcome as
// unknown.
func TestParkedProduceAnsweredNotEnoughReplicasAfterAppend(t *testing.T) {
	c := newTestCluster(t, clusterOptions{lagTime: time.Minute, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)
	// The followers die; the leader's lag time is a minute, so the ISR
	// stays {1 2 3} on its own and the produce parks.
	c.stopNode(2)
	c.stopNode(3)
	leader := c.node(1)

	answered := c.produceAsync(testKey, wire.AcksAll, 30000, 60*time.Second, buildBatch(-1, -1, []string{"b"}))
	waitFor(t, "b appended on the leader", 10*time.Second, func() bool {
		_, _, leo, _ := leader.b.PartitionInfo(testKey.topic, testKey.partition)
		return leo == 2
	})

	// The controller removes the dead followers: ISR {1}, below min ISR 2.
	c.mu.Lock()
	st := c.parts[testKey]
	st.ISR = []int32{1}
	st.PartitionEpoch++
	c.mu.Unlock()
	c.push(testKey)

	select {
	case a := <-answered:
		if a.err != nil || a.r.Err != wire.NotEnoughReplicasAfterAppend {
			t.Fatalf("produce answered %+v, %v after %v; want NotEnoughReplicasAfterAppend", a.r, a.err, a.in)
		}
		if !a.r.Err.Retriable() {
			t.Fatal("NotEnoughReplicasAfterAppend is not retriable")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a parked produce was not answered 10 s after the ISR fell below min ISR (its timeout is 30 s)")
	}
	hw, _, leo, _ := leader.b.PartitionInfo(testKey.topic, testKey.partition)
	if hw != 1 || leo != 2 || !slices.Equal(c.state(testKey).ISR, []int32{1}) {
		t.Fatalf("leader hw %d leo %d; want the batch kept in the log (leo 2) above the HW (1)", hw, leo)
	}
}
