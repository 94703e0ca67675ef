package client

import (
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A leader that answers UnknownLeaderEpoch to the epoch our metadata names
// it at has not applied that metadata yet: the batch is resent within
// milliseconds, without the retry backoff (an hour here) or a metadata
// refresh, and acknowledged once; the record is in the log once.
func TestProduceResendsSoonToALeaderBehindItsMetadata(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	var produces, metadata atomic.Int32
	fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
		switch ty {
		case wire.TypeMetadata:
			metadata.Add(1)
		case wire.TypeProduce:
			if produces.Add(1) <= 3 {
				return clienttest.Action{Kind: clienttest.Refuse, Code: wire.UnknownLeaderEpoch}
			}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	before := metadata.Load()
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour,
		DeliveryTimeout: 2 * time.Hour, LeaderCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d := produceN(t, p, "t", 1, 0)
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.got[0]; d.n[0] != 1 || got.Err != nil || got.Offset != 0 || produces.Load() != 4 {
		t.Fatalf("delivery %+v (%d) after %d produce requests; want offset 0 after 4", got, d.n[0], produces.Load())
	}
	if recs := fc.Records("t", 0); len(recs) != 1 {
		t.Fatalf("log holds %d records", len(recs))
	}
	if n := metadata.Load() - before; n != 0 {
		t.Fatalf("%d metadata requests while resending to the leader the metadata names", n)
	}
}

// A leader that stays behind past behindRefreshAfter answers gets the
// usual treatment: a metadata refresh (maybe ours is what changed) and the
// retry backoff, until a success.
func TestProduceRefreshesWhenTheLeaderStaysBehind(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	var produces, refreshes atomic.Int32
	fc.SetIntercept(func(_ string, ty quic.FrameType, req any) clienttest.Action {
		switch ty {
		case wire.TypeMetadata:
			if r, ok := req.(*wire.MetadataRequest); ok && r.MaxWaitMs == 0 {
				refreshes.Add(1)
			}
		case wire.TypeProduce:
			if produces.Add(1) <= behindRefreshAfter+2 {
				return clienttest.Action{Kind: clienttest.Refuse, Code: wire.UnknownLeaderEpoch}
			}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	before := refreshes.Load()
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Millisecond, RetryBackoffMax: 2 * time.Millisecond,
		LeaderCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d := produceN(t, p, "t", 1, 0)
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.got[0]; got.Err != nil || produces.Load() != behindRefreshAfter+3 {
		t.Fatalf("delivery %+v after %d produce requests", got, produces.Load())
	}
	if n := refreshes.Load() - before; n < 2 {
		t.Fatalf("%d metadata refreshes after %d UnknownLeaderEpoch answers in a row; want one per answer past %d",
			n, behindRefreshAfter+2, behindRefreshAfter)
	}
}
