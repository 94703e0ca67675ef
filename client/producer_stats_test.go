package client

import (
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// Stats counts every batch once and every request, failed ones too, and
// its histograms hold the batches' queue time (at least Linger for a batch
// that lingered) and the requests' round trips (at least the leader's
// delay).
func TestProducerStats(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.CreateTopic("lone", 1)
	const delay = 3 * time.Millisecond
	var k atomic.Int64
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty != wire.TypeProduce {
			return clienttest.Action{}
		}
		if k.Add(1)%4 == 1 {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.NotEnoughReplicas, Delay: delay}
		}
		return clienttest.Action{Delay: delay}
	})
	c := mustFakeClient(t, fc)
	const linger = 20 * time.Millisecond
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 512, Linger: linger, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Stats(); s.Batches != 0 || s.Requests != 0 || s.QueueTime.Count != 0 || s.RequestLatency.Count != 0 {
		t.Fatalf("stats of a new producer: %+v", s)
	}
	// A lone record lingers before its batch is sent (ProduceSync would
	// flush it at once).
	done := make(chan Delivery, 1)
	if err := p.Produce(testCtx(t), &Record{Topic: "lone", Value: []byte("x")}, func(d Delivery) { done <- d }); err != nil {
		t.Fatal(err)
	}
	if d := <-done; d.Err != nil {
		t.Fatal(d.Err)
	}
	lone := p.Stats()
	if lone.Batches != 1 || lone.QueueTime.Count != 1 || lone.QueueTime.Sum < linger {
		t.Fatalf("after a lone record: %d batches, queue time %+v; want one of at least %v", lone.Batches, lone.QueueTime, linger)
	}
	const n = 300
	d := produceN(t, p, "t", n, 0) // closes p
	checkExactlyOnce(t, fc, "t", 1, d, n)
	s := p.Stats()
	calls := uint64(fc.Calls(wire.TypeProduce))
	// Every refusal fails a request; so may the answers it leads to
	// (OutOfOrderSequence of the batches sent behind the refused one).
	refused := uint64(k.Load()+3) / 4
	if s.Requests != calls || s.FailedRequests < refused || s.FailedRequests >= s.Requests {
		t.Fatalf("requests %d (failed %d), the leader saw %d (refused %d)", s.Requests, s.FailedRequests, calls, refused)
	}
	var byCause uint64
	for _, n := range s.FailedByCause {
		byCause += n
	}
	if byCause != s.FailedRequests || s.FailedByCause["NotEnoughReplicas"] != refused {
		t.Fatalf("failed requests by cause %v (sum %d), failed %d, refused NotEnoughReplicas %d", s.FailedByCause, byCause, s.FailedRequests, refused)
	}
	if s.Batches == 0 || s.Batches >= s.Requests || s.QueueTime.Count != s.Batches || s.RequestLatency.Count != s.Requests {
		t.Fatalf("batches %d, requests %d, histogram counts %d and %d", s.Batches, s.Requests, s.QueueTime.Count, s.RequestLatency.Count)
	}
	if q := s.RequestLatency.Quantile(0.01); q < delay {
		t.Fatalf("request round trip p1 %v, below the leader's delay %v", q, delay)
	}
	later, ok := s.QueueTime.Sub(lone.QueueTime)
	if !ok || later.Count != s.Batches-1 {
		t.Fatalf("queue times after the lone record: %+v (ok %v), want %d", later, ok, s.Batches-1)
	}
}
