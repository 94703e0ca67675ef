package broker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOpenPartitionsConcurrently: OpenPartitions opens many logs several at
// a time, each exactly once even when callers race for the same
// partitions, and ApplyPartition then finds them open.
func TestOpenPartitionsConcurrently(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1})
	b := c.node(1).b
	var mu sync.Mutex
	opens := map[tp]int{}
	var inFlight, most atomic.Int32
	block := make(chan struct{})
	hook := func(key tp) {
		mu.Lock()
		opens[key]++
		mu.Unlock()
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-block // held until openParallelism opens are under way together
		inFlight.Add(-1)
	}
	b.hooks.opened.Store(&hook)
	var sts []PartitionState
	for i := range 3 * openParallelism {
		sts = append(sts, PartitionState{Topic: "many", TopicID: "id-many", Partition: int32(i), Leader: 1,
			Replicas: []int32{1}, ISR: []int32{1}, MinISR: 1})
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 3 { // racing callers for the same partitions
		wg.Add(1)
		go func() { defer wg.Done(); b.OpenPartitions(ctx, sts) }()
	}
	waitFor(t, fmt.Sprintf("%d opens at once", openParallelism), 10*time.Second, func() bool { return most.Load() >= openParallelism })
	close(block)
	wg.Wait()
	for _, st := range sts {
		key := tp{st.Topic, st.Partition}
		if opens[key] != 1 || b.partition(st.Topic, st.Partition) == nil {
			t.Fatalf("%v: opened %d times, open now: %v", key, opens[key], b.partition(st.Topic, st.Partition) != nil)
		}
		if err := b.ApplyPartition(ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if opens[tp{"many", 0}] != 1 {
		t.Fatal("ApplyPartition opened an open partition again")
	}
}
