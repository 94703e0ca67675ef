package client

import (
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/wire"
)

// A leader that answers UnknownLeaderEpoch to the epoch our metadata names
// it at has not applied that metadata yet: the batch is resent within
// milliseconds, without the retry backoff (an hour here) or a metadata
// refresh, and acknowledged once; the record is in the log once.
func TestProduceResendsSoonToALeaderBehindItsMetadata(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	bl := refuseAsBehind(fc, wire.TypeProduce, 3)
	c := refreshedFakeClient(t, fc)
	before := bl.refreshes.Load()
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour,
		DeliveryTimeout: 2 * time.Hour, LeaderCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d := produceN(t, p, "t", 1, 0)
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.got[0]; d.n[0] != 1 || got.Err != nil || got.Offset != 0 || bl.requests.Load() != 4 {
		t.Fatalf("delivery %+v (%d) after %d produce requests; want offset 0 after 4", got, d.n[0], bl.requests.Load())
	}
	if recs := fc.Records("t", 0); len(recs) != 1 {
		t.Fatalf("log holds %d records", len(recs))
	}
	if n := bl.refreshes.Load() - before; n != 0 {
		t.Fatalf("%d metadata refreshes while resending to the leader the metadata names", n)
	}
}

// A leader that stays behind past behindRefreshAfter answers gets the
// usual treatment: a metadata refresh (maybe ours is what changed) and the
// retry backoff, until a success.
func TestProduceRefreshesWhenTheLeaderStaysBehind(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	bl := refuseAsBehind(fc, wire.TypeProduce, behindRefreshAfter+2)
	c := refreshedFakeClient(t, fc)
	before := bl.refreshes.Load()
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Millisecond, RetryBackoffMax: 2 * time.Millisecond,
		LeaderCheckInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	d := produceN(t, p, "t", 1, 0)
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.got[0]; got.Err != nil || bl.requests.Load() != behindRefreshAfter+3 {
		t.Fatalf("delivery %+v after %d produce requests", got, bl.requests.Load())
	}
	if n := bl.refreshes.Load() - before; n < 2 {
		t.Fatalf("%d metadata refreshes after %d UnknownLeaderEpoch answers in a row; want one per answer past %d",
			n, behindRefreshAfter+2, behindRefreshAfter)
	}
}
