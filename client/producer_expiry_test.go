package client

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// Producer ids expire on the brokers after a quiet period
// (node/broker/producer_expiry.go): a leader with no state for the
// producer id answers its next batch UnknownProducerID. The partition must
// restart its sequence at once, under the next producer epoch: one extra
// round trip, no backoff, no InitProducerID, no error to the application,
// nothing written twice, order kept.

// expiryProducer is a producer on a one-partition topic of a fake cluster
// whose retry backoff (2 s) is longer than the tests wait for a record.
func expiryProducer(t *testing.T, cfg ProducerConfig) (*clienttest.Cluster, *Producer) {
	t.Helper()
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	cfg.Linger = time.Millisecond
	cfg.RetryBackoff, cfg.RetryBackoffMax = 2*time.Second, 2*time.Second
	p, err := c.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return fc, p
}

// produceOne produces record "v<i>" and checks it is acknowledged at offset
// want within a second, at the cost of at most maxRequests produce requests
// and no InitProducerID (besides the producer's first, for v0).
func produceOne(t *testing.T, fc *clienttest.Cluster, p *Producer, i int, want int64, maxRequests int64) {
	t.Helper()
	reqs, pids := fc.Calls(wire.TypeProduce), fc.Calls(wire.TypeInitProducerID)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	d, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte(fmt.Sprintf("v%d", i))})
	reqs, pids = fc.Calls(wire.TypeProduce)-reqs, fc.Calls(wire.TypeInitProducerID)-pids
	if err != nil || d.Offset != want {
		t.Fatalf("v%d: %+v %v, want offset %d (%d produce requests)", i, d, err, want, reqs)
	}
	if i == 0 {
		pids = 0
	}
	if reqs > maxRequests || pids != 0 {
		t.Fatalf("v%d: %d produce requests and %d InitProducerID, want at most %d and none", i, reqs, pids, maxRequests)
	}
}

// TestProduceAfterProducerIDExpiredRestartsAtOnce: after the leader forgot
// the producer id the next record costs exactly one refused request, and a
// pipelined burst after a second expiry (several batches in flight, all
// refused) is delivered whole, once each, in order.
func TestProduceAfterProducerIDExpiredRestartsAtOnce(t *testing.T) {
	fc, p := expiryProducer(t, ProducerConfig{BatchBytes: 256})
	for i := range 5 {
		produceOne(t, fc, p, i, int64(i), 1)
	}
	fc.ForgetProducers("t", 0)
	produceOne(t, fc, p, 5, 5, 2)
	produceOne(t, fc, p, 6, 6, 1)

	fc.ForgetProducers("t", 0)
	fc.InterceptProduce(clienttest.Action{Delay: 2 * time.Millisecond}) // let batches pile up in flight
	ctx := testCtx(t)
	d := newDeliveries()
	const n = 200
	for i := 7; i < n; i++ {
		if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte(fmt.Sprintf("v%d", i))}, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		d.cb(i)(Delivery{Topic: "t", Offset: int64(i)})
	}
	checkExactlyOnce(t, fc, "t", 1, d, n)
	if got := fc.Calls(wire.TypeInitProducerID); got != 1 {
		t.Fatalf("%d InitProducerID requests, want 1 (the first)", got)
	}
}

// TestProduceRestartedSequenceIsNotTakenForARetry: the leader answers
// UnknownProducerID (it forgot the producer id) and leadership then moves
// to a replica that still remembers the producer's first batches, at
// sequences 0-2. The restarted sequence must not read as a retry of those
// (a restart at sequence 0 under the same producer epoch would be answered
// with the old batch's offset, and the record silently lost): it goes out
// under the next epoch and is written.
func TestProduceRestartedSequenceIsNotTakenForARetry(t *testing.T) {
	fc, p := expiryProducer(t, ProducerConfig{})
	for i := range 3 {
		produceOne(t, fc, p, i, int64(i), 1)
	}
	var refused atomic.Bool
	fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
		if ty == wire.TypeProduce && refused.CompareAndSwap(false, true) {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.UnknownProducerID}
		}
		return clienttest.Action{}
	})
	produceOne(t, fc, p, 3, 3, 2)
	produceOne(t, fc, p, 4, 4, 1)
	if recs := fc.Records("t", 0); len(recs) != 5 || string(recs[3].Value) != "v3" {
		t.Fatalf("log %v, want v0..v4", recs)
	}
}

// TestProduceRestartTakesAFreshIDOnceTheEpochsAreUsedUp: a producer id at
// the last epoch cannot be bumped: the restart asks for a fresh producer id
// (one InitProducerID) and still delivers.
func TestProduceRestartTakesAFreshIDOnceTheEpochsAreUsedUp(t *testing.T) {
	fc, p := expiryProducer(t, ProducerConfig{})
	fc.SetProducerEpoch(math.MaxInt16)
	produceOne(t, fc, p, 0, 0, 1)
	produceOne(t, fc, p, 1, 1, 1)
	fc.ForgetProducers("t", 0)
	pids := fc.Calls(wire.TypeInitProducerID)
	ctx := testCtx(t)
	d, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte("v2")})
	if err != nil || d.Offset != 2 {
		t.Fatalf("v2: %+v %v", d, err)
	}
	if got := fc.Calls(wire.TypeInitProducerID) - pids; got != 1 {
		t.Fatalf("%d InitProducerID requests for the restart, want 1", got)
	}
	produceOne(t, fc, p, 3, 3, 1)
}
