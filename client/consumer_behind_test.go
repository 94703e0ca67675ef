package client

import (
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/wire"
)

// A leader that answers a fetch UnknownLeaderEpoch at the epoch our
// metadata names it at has not applied that metadata yet: the consumer
// fetches again within milliseconds, without its retry backoff (an hour
// here) or a metadata refresh.
func TestConsumeRefetchesSoonFromALeaderBehindItsMetadata(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	bl := refuseAsBehind(fc, wire.TypeFetch, 3)
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 30 * time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	msgs := pollN(t, cs, 1)
	if string(msgs[0].Value) != "a" || bl.requests.Load() < 4 {
		t.Fatalf("got %q after %d fetches", msgs[0].Value, bl.requests.Load())
	}
	if n := bl.refreshes.Load(); n != 0 {
		t.Fatalf("%d metadata refreshes while fetching again from the leader the metadata names", n)
	}
}
