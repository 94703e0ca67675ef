package broker

import (
	"fmt"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestHWRidesWithRecords: a follower's fetch answer that would carry only a
// new HW waits ReplicaHWDelay for records to carry it, so a stream of
// acks=all produces costs each follower one answer per produce (the
// records) instead of two (the records, then the HW they moved); an idle
// follower still learns the HW once the delay passes.
func TestHWRidesWithRecords(t *testing.T) {
	const produces = 40
	c := newTestCluster(t, clusterOptions{hwDelay: time.Second, maxWait: 10 * time.Second, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	waitInSync(t, c, testKey)
	leader := c.node(1).b
	before := leader.Stats().ReplicaFetchResponses
	for i := range produces {
		if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{fmt.Sprint(i)})); r.Err != wire.None || r.BaseOffset != int64(i) {
			t.Fatalf("produce %d: %+v", i, r)
		}
	}
	answers := leader.Stats().ReplicaFetchResponses - before
	// Two followers, one answer each per produce; a few spare for a produce
	// that took longer than the delay on a loaded machine.
	if answers > 2*produces+6 {
		t.Fatalf("%d follower answers for %d produces: HW-only answers were not held for records", answers, produces)
	}
	t.Logf("%d follower answers for %d produces", answers, produces)
	waitInSync(t, c, testKey)
}
