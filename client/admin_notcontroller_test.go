package client

import (
	"strings"
	"sync/atomic"
	"testing"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// refuseFirst makes the fake cluster handle the first request of type ft,
// then answer it with NotController: a controller that proposed the
// request's records and lost its role before they committed, which the next
// controller then applied (node/controller/batch.go answers NotController
// "whether or not it commits later").
func refuseFirst(fc *clienttest.Cluster, ft quic.FrameType) *atomic.Bool {
	var refused atomic.Bool
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty == ft && refused.CompareAndSwap(false, true) {
			return clienttest.Action{Kind: clienttest.HandleThenRefuse, Code: wire.NotController}
		}
		return clienttest.Action{}
	})
	return &refused
}

// CreatePartitions retried after such a NotController finds the count it
// asked for ("already has 3 partitions") and succeeds, as after a lost
// answer: it used to fail although its own first attempt had applied.
func TestAdminCreatePartitionsAfterNotControllerThatCommitted(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	refused := refuseFirst(fc, wire.TypeCreatePartitions)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	if err := c.Admin().CreatePartitions(ctx, "t", 3); err != nil {
		t.Fatalf("CreatePartitions whose first attempt applied before a NotController answer: %v", err)
	}
	if !refused.Load() {
		t.Fatal("no answer was refused")
	}
	if n, _ := c.PartitionCount(ctx, "t"); n != 3 {
		t.Fatalf("%d partitions after the call, want 3", n)
	}
}

// CreateTopic retried after such a NotController is refused with
// TopicAlreadyExists saying that the earlier attempt may have created the
// topic, as after a lost answer.
func TestAdminCreateTopicAfterNotControllerThatCommitted(t *testing.T) {
	fc := clienttest.New(3)
	refused := refuseFirst(fc, wire.TypeCreateTopic)
	c := mustFakeClient(t, fc)
	_, err := c.Admin().CreateTopic(testCtx(t), TopicSpec{Name: "x", Partitions: 2})
	if ErrorCode(err) != wire.TopicAlreadyExists || !strings.Contains(err.Error(), "may have created it") {
		t.Fatalf("create retried after NotController: %v; want TopicAlreadyExists saying the earlier attempt may have created it", err)
	}
	if !refused.Load() {
		t.Fatal("no answer was refused")
	}
}

// DeleteTopic retried after such a NotController finds no topic and
// succeeds: its own first attempt deleted it. A topic that does not exist
// is still refused when nothing was retried.
func TestAdminDeleteTopicAfterNotControllerThatCommitted(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	refused := refuseFirst(fc, wire.TypeDeleteTopic)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	if err := c.Admin().DeleteTopic(ctx, "t"); err != nil {
		t.Fatalf("DeleteTopic whose first attempt applied before a NotController answer: %v", err)
	}
	if !refused.Load() {
		t.Fatal("no answer was refused")
	}
	if err := c.Admin().DeleteTopic(ctx, "t"); ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("deleting it again: %v, want UnknownTopicOrPartition", err)
	}
}
