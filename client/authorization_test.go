package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A cluster enforcing ACLs refuses what the client's principal may not do
// with TopicAuthorizationFailed, GroupAuthorizationFailed or
// ClusterAuthorizationFailed, none retriable: each must fail what asked,
// with an error naming the code and the node's message, well before any
// timeout, never be retried until one.

// authzWithin is how long a refused call may take: far below the producer's
// delivery timeout and metadata wait, and the contexts, set longer.
const authzWithin = 5 * time.Second

// refuseType answers every request of type ft with code (Refuse).
func refuseType(fc *clienttest.Cluster, ft quic.FrameType, code wire.ErrorCode) {
	fc.SetIntercept(func(_ string, ty quic.FrameType, _ any) clienttest.Action {
		if ty == ft {
			return clienttest.Action{Kind: clienttest.Refuse, Code: code}
		}
		return clienttest.Action{}
	})
}

// wantCode fails unless err carries code and took less than authzWithin.
func wantCode(t *testing.T, what string, err error, code wire.ErrorCode, start time.Time) {
	t.Helper()
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != code || !strings.Contains(err.Error(), code.String()) {
		t.Fatalf("%s: %v, want an error carrying %s", what, err, code)
	}
	if d := time.Since(start); d > authzWithin {
		t.Fatalf("%s: failed after %v, want at once", what, d)
	}
}

// A Produce answered TopicAuthorizationFailed fails the delivery after
// that one attempt, "not written", with the leader's refusal.
func TestProduceTopicAuthorizationFailedFailsTheDelivery(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	for _, idem := range []bool{true, false} {
		p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, DeliveryTimeout: time.Minute, DisableIdempotence: !idem})
		if err != nil {
			t.Fatal(err)
		}
		refuseType(fc, wire.TypeProduce, wire.TopicAuthorizationFailed)
		before := fc.Calls(wire.TypeProduce)
		start := time.Now()
		_, err = p.ProduceSync(testCtx(t), &Record{Topic: "t", Value: []byte("v")})
		wantCode(t, "produce", err, wire.TopicAuthorizationFailed, start)
		var de *DeliveryError
		if !errors.As(err, &de) || de.Unknown || de.Attempts != 1 {
			t.Fatalf("idempotent %v: %#v, want a DeliveryError after 1 attempt, certainly not written", idem, err)
		}
		if n := fc.Calls(wire.TypeProduce) - before; n != 1 {
			t.Fatalf("idempotent %v: %d produce requests, want 1", idem, n)
		}
		fc.SetIntercept(nil)
		p.Close(testCtx(t))
	}
}

// An idempotent producer whose producer id is refused
// (ClusterAuthorizationFailed: its principal may write to no topic) fails
// its records at once, saying why, instead of asking again until the
// delivery timeout; and asks one node, not each in turn.
func TestProduceProducerIDRefusedFailsAtOnce(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	refuseType(fc, wire.TypeInitProducerID, wire.ClusterAuthorizationFailed)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, DeliveryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	for i := range 2 { // and again for the next record
		before := fc.Calls(wire.TypeInitProducerID)
		start := time.Now()
		_, err := p.ProduceSync(testCtx(t), &Record{Topic: "t", Value: []byte("v")})
		wantCode(t, "produce", err, wire.ClusterAuthorizationFailed, start)
		var de *DeliveryError
		if !errors.As(err, &de) || de.Unknown || !strings.Contains(err.Error(), "write on some topic") {
			t.Fatalf("record %d: %v, want a DeliveryError, certainly not written, saying what the principal needs", i, err)
		}
		if n := fc.Calls(wire.TypeInitProducerID) - before; n != 1 {
			t.Fatalf("record %d: %d InitProducerID requests, want 1", i, n)
		}
	}
	if n := fc.Calls(wire.TypeProduce); n != 0 {
		t.Fatalf("%d produce requests without a producer id", n)
	}
	// Allowed again (an ACL added): the producer goes on.
	fc.SetIntercept(nil)
	if d, err := p.ProduceSync(testCtx(t), &Record{Topic: "t", Value: []byte("v")}); err != nil || d.Offset != 0 {
		t.Fatalf("after the refusal ended: %+v %v", d, err)
	}
}

// A fetch answered TopicAuthorizationFailed makes Poll return the error
// naming the partition and the refusal; so does the ListOffsets that
// resolves a SeekBeginning.
func TestPollTopicAuthorizationFailed(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	for _, ft := range []quic.FrameType{wire.TypeFetch, wire.TypeListOffsets} {
		refuseType(fc, ft, wire.TopicAuthorizationFailed)
		cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
		from := SeekBeginning
		if ft == wire.TypeFetch {
			from = 0
		}
		cs.Assign([]TopicPartition{{"t", 0}}, from)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		var err error
		for err == nil && ctx.Err() == nil {
			_, err = cs.Poll(ctx)
		}
		cancel()
		wantCode(t, "poll with "+map[quic.FrameType]string{wire.TypeFetch: "Fetch", wire.TypeListOffsets: "ListOffsets"}[ft]+" refused",
			err, wire.TopicAuthorizationFailed, start)
		cs.Close()
	}
}

// A topic the principal may not describe is left out of the metadata;
// asked for by name, a node refuses it. Produce, PartitionCount and
// DescribeTopic say TopicAuthorizationFailed, at once: not "does not
// exist" after the producer's metadata wait.
func TestTopicNotDescribable(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	fc.HideTopic("t", true)
	fc.HideTopic("nosuch", true) // the node's answer is the same for a topic that does not exist
	c := refreshedFakeClient(t, fc)
	ctx := testCtx(t)
	for _, topic := range []string{"t", "nosuch"} {
		start := time.Now()
		_, err := c.PartitionCount(ctx, topic)
		wantCode(t, "partition count of "+topic, err, wire.TopicAuthorizationFailed, start)
		if !strings.Contains(err.Error(), "may not describe") {
			t.Fatalf("partition count of %s: %v", topic, err)
		}
	}
	start := time.Now()
	_, err := c.Admin().DescribeTopic(ctx, "t")
	wantCode(t, "describe", err, wire.TopicAuthorizationFailed, start)
	p, err := c.NewProducer(ProducerConfig{MetadataWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	start = time.Now()
	err = p.Produce(ctx, &Record{Topic: "t", Value: []byte("v")}, nil)
	wantCode(t, "produce", err, wire.TopicAuthorizationFailed, start)

	// A topic that does not exist (and is not hidden) is still that.
	if _, err := c.PartitionCount(ctx, "other"); ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("partition count of a missing topic: %v", err)
	}
	fc.HideTopic("t", false)
	if n, err := c.PartitionCount(ctx, "t"); err != nil || n != 2 {
		t.Fatalf("after an ACL allows it: %d %v", n, err)
	}
}

// A group consumer whose heartbeat is refused GroupAuthorizationFailed
// does not join: NewGroupConsumer returns the refusal.
func TestGroupConsumerAuthorizationFailed(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	refuseType(fc, wire.TypeGroupHeartbeat, wire.GroupAuthorizationFailed)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	g, err := c.NewGroupConsumer(ctx, GroupConsumerConfig{Group: "g", Topics: []string{"t"}})
	if err == nil {
		g.Close(context.Background())
	}
	wantCode(t, "join", err, wire.GroupAuthorizationFailed, start)
}

// A consumer assigned a topic that its principal may not describe (or no
// longer: the topic drops out of the metadata) gets
// TopicAuthorizationFailed from Poll, not an endless wait for a leader;
// one assigned a topic that does not exist still waits.
func TestPollTopicNotDescribable(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a")
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}, {"nosuch", 0}}, SeekBeginning)
	pollN(t, cs, 1)
	fc.HideTopic("t", true)
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	var err error
	for err == nil && ctx.Err() == nil {
		_, err = cs.Poll(ctx)
	}
	wantCode(t, "poll", err, wire.TopicAuthorizationFailed, start)
	if !strings.Contains(err.Error(), "t/0") {
		t.Fatalf("poll: %v, want the partition named", err)
	}
	// Allowed again, and the other topic is only missing: no error.
	fc.HideTopic("t", false)
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if _, err := cs.Poll(testCtx(t)); err != nil {
			t.Fatalf("poll after the topic is allowed again: %v", err)
		}
	}
}
