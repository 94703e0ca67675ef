package client

import (
	"context"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A leader that refuses a batch with NotLeader as it stops (a rolling
// restart's controlled shutdown) was also the node whose metadata answer
// was last news, so the refresh the refusal asks for asks it first; it
// answers nothing more (stopped, or restarting). The refresh must go on to
// the other nodes after the short hedge of a stalled request, not wait for
// the stopped one for the client's HedgeDelay (an hour here; 300 ms by
// default, which held writes in a rolling restart until the node answered
// again, restarted, ~200 ms after it stopped).
func TestProduceRefreshDoesNotWaitForTheStoppedLeader(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	if l, _ := fc.Leader("t", 0); l != 1 {
		t.Fatalf("leader %d; the test wants node 1", l)
	}
	c := newWithCaller(Config{Bootstrap: fc.Addrs(), HedgeDelay: time.Hour, MetadataTimeout: time.Hour,
		Logger: testLogger(t)}, fc)
	t.Cleanup(func() { c.Close(context.Background()) })
	ctx := testCtx(t)
	if err := c.meta.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := c.meta.candidates()[0]; got != "fake-1" {
		t.Fatalf("the next refresh asks %s first; the test wants the leader, fake-1", got)
	}

	// Node 1 stops: its leadership moves to node 2, it refuses the batches
	// that still reach it, and its metadata requests get no answer (the
	// fake's producer ids still come from it: not what is tested here).
	fc.SetLeader("t", 0, 2)
	fc.SetIntercept(func(addr string, ty quic.FrameType, _ any) clienttest.Action {
		if addr != "fake-1" {
			return clienttest.Action{}
		}
		switch ty {
		case wire.TypeProduce:
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.NotLeader}
		case wire.TypeMetadata:
			return clienttest.Action{Kind: clienttest.Hang}
		}
		return clienttest.Action{}
	})
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Millisecond, RetryBackoffMax: time.Millisecond,
		LeaderCheckInterval: 40 * time.Millisecond, DeliveryTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	d := produceN(t, p, "t", 1, 0)
	took := time.Since(start)
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.got[0]; d.n[0] != 1 || got.Err != nil || got.Offset != 0 {
		t.Fatalf("delivery %+v (%d callbacks) after %v; want offset 0 from node 2", got, d.n[0], took)
	}
	t.Logf("delivered by node 2 %v after node 1 stopped", took)
}
