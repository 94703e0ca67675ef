package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// unsequencedBatch is a batch as a producer without idempotence sends it:
// producer id -1, no sequence.
func unsequencedBatch(vals ...string) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{ProducerID: -1, BaseSequence: -1})
	for _, v := range vals {
		bd.Add(1700000000000, nil, []byte(v), nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// Two produce requests without sequences, sent in order on one connection
// for one partition: the first one's handler is held after it is decoded,
// so the second one reaches the append first. It waits for the first, and
// the log holds them in the order sent. The first batch is the larger, as
// a producer's first request often is.
func TestUnsequencedBatchesAreAppendedInStreamOrder(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1})
	c.createPartition(testKey.topic, testKey.partition, []int32{1}, 1, 1)
	b := c.node(1).b
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if r, err := c.fetch(ctx, testKey, 0, 0); err != nil || r.Err != wire.None { // the connection
		t.Fatalf("fetch: %+v, %v", r, err)
	}
	firstIn, hold := make(chan struct{}), make(chan struct{})
	orderDeclaredHook = func(req *wire.ProduceRequest) {
		if len(req.Parts[0].Batch) > 32<<10 { // the first request
			close(firstIn)
			<-hold
		}
	}
	defer func() { orderDeclaredHook = nil }()
	st := c.state(testKey)
	send := func(ctx context.Context, batch []byte, answered chan<- wire.ProducePartitionResponse) {
		var resp wire.ProduceResponse
		err := c.client.Call(ctx, c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksLeader, TimeoutMs: 20000,
			Topic: testKey.topic, Parts: []wire.ProducePartition{{Partition: testKey.partition, LeaderEpoch: st.LeaderEpoch, Batch: batch}}}, &resp)
		if err != nil || len(resp.Parts) != 1 {
			t.Errorf("produce: %+v, %v", resp, err)
			resp.Parts = []wire.ProducePartitionResponse{{Err: wire.Unknown}}
		}
		answered <- resp.Parts[0]
	}
	first, written := quic.WriteAfter(ctx, nil)
	second, _ := quic.WriteAfter(ctx, written)
	answers := make(chan wire.ProducePartitionResponse, 2)
	big := string(make([]byte, 64<<10))
	go send(first, unsequencedBatch(big, "A"), answers)
	select {
	case <-firstIn:
	case <-ctx.Done():
		t.Fatal("the first request was not decoded with its stream order")
	}
	go send(second, unsequencedBatch("B"), answers)
	p := b.partition(testKey.topic, testKey.partition)
	waitFor(t, "the second batch to wait for the first", 10*time.Second, func() bool {
		return b.counters.orderAwaiting.Load() == 1 || p.log.LogEndOffset() > 0
	})
	if p.log.LogEndOffset() > 0 {
		t.Fatal("the second batch was appended while the first was held")
	}
	close(hold)
	for range 2 {
		if r := <-answers; r.Err != wire.None {
			t.Fatalf("answer: %+v", r)
		}
	}
	got := readAll(t, p.log, p.log.LogEndOffset())
	if len(got) != 3 || got[0] != big || got[1] != "A" || got[2] != "B" {
		t.Fatalf("the log holds %d records, at 1 and 2: %q, %q; want A then B", len(got), got[1], got[2])
	}
	if s := b.Stats(); s.ProduceStreamOrderWaits != 1 || s.ProduceStreamOrderSkipped != 0 {
		t.Fatalf("counted %d waits, %d skipped; want 1 and 0", s.ProduceStreamOrderWaits, s.ProduceStreamOrderSkipped)
	}
}
