package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
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
	var holdOnce sync.Once
	release := func() { holdOnce.Do(func() { close(hold) }) }
	defer release() // also when the test fails with the first one held
	orderDeclaredHook = func(req *wire.ProduceRequest) {
		if len(req.Parts[0].Batch) > 32<<10 { // the first request
			close(firstIn)
			<-hold
		}
	}
	defer func() { orderDeclaredHook = nil }()
	st := c.state(testKey)
	send := func(ctx context.Context, batch []byte, answered chan<- error) {
		var resp wire.ProduceResponse
		err := c.client.Call(ctx, c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksLeader, TimeoutMs: 20000,
			Topic: testKey.topic, Parts: []wire.ProducePartition{{Partition: testKey.partition, LeaderEpoch: st.LeaderEpoch, Batch: batch}}}, &resp)
		if err == nil && (len(resp.Parts) != 1 || resp.Parts[0].Err != wire.None) {
			err = fmt.Errorf("answer %+v", resp)
		}
		answered <- err
	}
	first, written := quic.WriteAfter(ctx, nil)
	second, _ := quic.WriteAfter(ctx, written)
	answers := make(chan error, 2)
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
	release()
	for range 2 {
		if err := <-answers; err != nil {
			t.Fatalf("produce: %v", err)
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

// The real producer without idempotence, five requests in flight and small
// batches sent at once, on one connection: with nothing retried, the log
// holds every record once, in the order produced.
func TestClientProducerWithoutIdempotenceKeepsOrderInFlight(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1})
	c.createPartition(testKey.topic, testKey.partition, []int32{1}, 1, 1)
	var pids atomic.Int64
	c.serveClient(c.node(1), &pids)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newTestClient(ctx, t, c.addrs())
	if cl == nil {
		t.FailNow()
	}
	p, err := cl.NewProducer(client.ProducerConfig{DisableIdempotence: true, Acks: client.AcksLeader, MaxInFlight: 5,
		BatchBytes: 300, Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	const total = 4000
	var failed atomic.Int64
	for i := range total {
		r := &client.Record{Topic: testKey.topic, Partition: testKey.partition, PartitionSet: true, Value: []byte(fmt.Sprintf("pay-%05d", i))}
		if err := p.Produce(ctx, r, func(d client.Delivery) {
			if d.Err != nil {
				failed.Add(1)
			}
		}); err != nil {
			t.Fatalf("produce %d: %v", i, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d records failed", n)
	}
	b := c.node(1).b
	if st := p.Stats(); st.Requests != st.Batches {
		t.Fatalf("%d requests for %d batches: retried (%v), where the order may break", st.Requests, st.Batches, st.FailedByCause)
	}
	lg := b.partition(testKey.topic, testKey.partition).log
	got := readAll(t, lg, lg.LogEndOffset())
	if len(got) != total {
		t.Fatalf("the log holds %d records, want %d", len(got), total)
	}
	for off := range int64(total) {
		if want := fmt.Sprintf("pay-%05d", off); got[off] != want {
			t.Fatalf("offset %d holds %s, want %s (stream order waits: %d)", off, got[off], want, b.Stats().ProduceStreamOrderWaits)
		}
	}
	t.Logf("%d batches waited for an earlier stream", b.Stats().ProduceStreamOrderWaits)
}
