package client

import (
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A leader that answers a fetch UnknownLeaderEpoch at the epoch our
// metadata names it at has not applied that metadata yet: the consumer
// fetches again within milliseconds, without its retry backoff (an hour
// here) or a metadata refresh.
func TestConsumeRefetchesSoonFromALeaderBehindItsMetadata(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	var fetches, refreshes atomic.Int32
	fc.SetIntercept(func(_ string, ty quic.FrameType, req any) clienttest.Action {
		switch ty {
		case wire.TypeMetadata:
			if r, ok := req.(*wire.MetadataRequest); ok && r.MaxWaitMs == 0 {
				refreshes.Add(1)
			}
		case wire.TypeFetch:
			if fetches.Add(1) <= 3 {
				return clienttest.Action{Kind: clienttest.Refuse, Code: wire.UnknownLeaderEpoch}
			}
		}
		return clienttest.Action{}
	})
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	msgs := pollN(t, cs, 1)
	if string(msgs[0].Value) != "a" || fetches.Load() < 4 {
		t.Fatalf("got %q after %d fetches", msgs[0].Value, fetches.Load())
	}
	if n := refreshes.Load(); n != 0 {
		t.Fatalf("%d metadata refreshes while fetching again from the leader the metadata names", n)
	}
}
