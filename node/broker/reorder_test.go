package broker

import (
	"context"
	"math"
	"testing"
	"time"

	"paymentlog/wire"
)

// waitingForEarlier waits until a batch of partition key on node 1 waits
// for an earlier one (reorder.go).
func waitingForEarlier(t *testing.T, c *testCluster) {
	t.Helper()
	p := c.node(1).b.partition(testKey.topic, testKey.partition)
	deadline := time.Now().Add(10 * time.Second)
	for {
		p.appendMu.Lock()
		waiting := p.reordered != nil
		p.appendMu.Unlock()
		if waiting {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no batch waits for an earlier one")
		}
		time.Sleep(time.Millisecond)
	}
}

// A batch that reaches the leader before an earlier one of its producer
// (their requests' streams overtook each other) waits for it instead of
// being refused: both are appended, in sequence order. For a producer new
// on the partition (its sequence 0 not there yet) and for one already
// known. The waits are long here: the earlier batch is sent only once the
// later one waits, and a produce call can take longer than the default
// 25 ms on a busy machine (it did under -race in CI).
func TestBatchAheadOfItsProducerWaitsForTheEarlierOne(t *testing.T) {
	c := newTestCluster(t, clusterOptions{reorderWait: 5 * time.Second})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	type answer struct {
		r   wire.ProducePartitionResponse
		err error
	}
	for _, step := range []struct {
		name          string
		first, second []byte // sent in that order; second is the producer's earlier batch
		firstBase     int64
		secondBase    int64
	}{
		{"new producer", buildBatch(42, 2, []string{"c", "d"}), buildBatch(42, 0, []string{"a", "b"}), 2, 0},
		{"known producer", buildBatch(42, 7, []string{"h"}), buildBatch(42, 4, []string{"e", "f", "g"}), 7, 4},
	} {
		late := make(chan answer, 1)
		go func() {
			r, err := c.produce(ctx, testKey, wire.AcksAll, step.first)
			late <- answer{r, err}
		}()
		waitingForEarlier(t, c)
		r, err := c.produce(ctx, testKey, wire.AcksAll, step.second)
		if err != nil || r.Err != wire.None || r.BaseOffset != step.secondBase {
			t.Fatalf("%s: the earlier batch: %+v, %v; want offset %d", step.name, r, err, step.secondBase)
		}
		a := <-late
		if a.err != nil || a.r.Err != wire.None || a.r.BaseOffset != step.firstBase {
			t.Fatalf("%s: the batch that came first: %+v, %v; want offset %d after the earlier one", step.name, a.r, a.err, step.firstBase)
		}
	}
	if st := c.node(1).b.Stats(); st.ProduceReorderWaits != 2 || st.ProduceReorderRefused != 0 {
		t.Fatalf("counted %d waits, %d refused after one; want 2 and 0", st.ProduceReorderWaits, st.ProduceReorderRefused)
	}
}

// A batch whose earlier ones never come is refused as before, after the
// wait: a gap (OutOfOrderSequence) and a producer the leader does not know
// (UnknownProducerID). A batch behind the sequence (an old one the leader
// no longer remembers) is refused at once. The waits are the configured
// ones (400 ms here, above both defaults).
func TestBatchAheadOfAGapIsRefusedAfterTheWait(t *testing.T) {
	const wait = 400 * time.Millisecond
	c := newTestCluster(t, clusterOptions{reorderWait: wait})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(42, 0, []string{"a"})); r.Err != wire.None {
		t.Fatalf("first: %+v", r)
	}
	for _, cs := range []struct {
		name  string
		batch []byte
		want  wire.ErrorCode
		wait  time.Duration
	}{
		{"gap", buildBatch(42, 5, []string{"x"}), wire.OutOfOrderSequence, wait},
		{"unknown producer", buildBatch(43, 3, []string{"y"}), wire.UnknownProducerID, wait},
	} {
		start := time.Now()
		r := mustProduce(t, c, wire.AcksAll, cs.batch)
		took := time.Since(start)
		if r.Err != cs.want {
			t.Fatalf("%s: %+v, want %v", cs.name, r, cs.want)
		}
		if took < cs.wait {
			t.Fatalf("%s: refused after %v, before the wait (%v) was up", cs.name, took, cs.wait)
		}
	}
	if st := c.node(1).b.Stats(); st.ProduceReorderWaits != 2 || st.ProduceReorderRefused != 2 {
		t.Fatalf("counted %d waits, %d refused after one; want 2 and 2", st.ProduceReorderWaits, st.ProduceReorderRefused)
	}
}

func TestProducerSequenceAhead(t *testing.T) {
	s := newProducerState()
	s.update(1, 0, 10, 4, 100, 0)              // sequences 10..14: next 15
	s.update(2, 3, math.MaxInt32-1, 2, 200, 0) // wraps: MaxInt32-1, MaxInt32, 0: next 1
	for _, c := range []struct {
		pid   int64
		epoch int16
		seq   int32
		want  aheadKind
	}{
		{1, 0, 16, aheadOfKnown},
		{1, 0, 1000, aheadOfKnown},
		{1, 0, 15, notAhead}, // next: not refused for order
		{1, 0, 12, notAhead}, // behind
		{1, 0, 0, notAhead},
		{1, 1, 3, aheadOfFirst}, // a new epoch waits for its sequence 0
		{1, 1, 0, notAhead},     // which is no wait
		{2, 2, 5, notAhead},     // an older epoch: fenced
		{2, 3, 2, aheadOfKnown}, // ahead across the wrap
		{2, 3, math.MaxInt32 - 5, notAhead},
		{9, 0, 1, aheadOfFirst}, // an unknown producer, not at 0
		{9, 0, 0, notAhead},
	} {
		if got := s.ahead(c.pid, c.epoch, c.seq); got != c.want {
			t.Errorf("ahead(pid %d, epoch %d, seq %d) = %v, want %v", c.pid, c.epoch, c.seq, got, c.want)
		}
	}
}
