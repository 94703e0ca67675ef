package client

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A partition dropped while a fetch for it is in flight gets none of that
// fetch's records, though the fetch is not abandoned (it carries another
// partition too), and one assigned again starts where the new Assign says,
// not where the old fetch read.
func TestConsumerUnassignDropsFetchesInFlight(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	fc.SetLeader("t", 0, 1)
	fc.SetLeader("t", 1, 1) // one fetch carries both
	c := refreshedFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b", "c")
	produceValues(t, c, "t", 1, "x")
	gate := make(chan struct{})
	var held atomic.Bool
	fc.SetIntercept(func(_ string, ft quic.FrameType, _ any) clienttest.Action {
		if ft == wire.TypeFetch && held.CompareAndSwap(false, true) {
			<-gate // the first fetch waits until the test lets it go
		}
		return clienttest.Action{}
	})
	if err := c.meta.refresh(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	p0, p1 := TopicPartition{"t", 0}, TopicPartition{"t", 1}
	cs.Assign([]TopicPartition{p0, p1}, 0)
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	if msgs, err := cs.Poll(ctx); len(msgs) > 0 {
		t.Fatalf("poll with the fetch held: %v, %v", values(msgs), err)
	}
	cancel()
	if !held.Load() || len(cs.inflight) != 1 {
		t.Fatalf("fetch held %v, %d in flight; want the one fetch of both partitions", held.Load(), len(cs.inflight))
	}

	cs.Unassign([]TopicPartition{p0, {"t", 9}})
	if got := cs.Assignment(); !slices.Equal(got, []TopicPartition{p1}) {
		t.Fatalf("assignment after Unassign: %v", got)
	}
	if _, ok := cs.Position(p0); ok {
		t.Fatal("dropped partition still has a position")
	}
	close(gate)
	got := pollN(t, cs, 1)
	if vs := values(got); !slices.Equal(vs, []string{"x"}) {
		t.Fatalf("the held fetch returned %v; want only x (a b c are the dropped partition's)", vs)
	}

	// Assigned again, at 2: the old fetch's records are long gone; a new
	// fetch starts at 2.
	cs.Assign([]TopicPartition{p0}, 2)
	if vs := values(pollN(t, cs, 1)); !slices.Equal(vs, []string{"c"}) {
		t.Fatalf("after assigning it again at 2: %v; want c", vs)
	}
}

// A fetch in flight for dropped partitions only is abandoned, and when the
// partition is assigned again before that fetch's answer arrives, the
// answer is not taken for the new assignment's.
func TestConsumerUnassignThenAssignAgainIgnoresTheOldFetch(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	c := refreshedFakeClient(t, fc)
	produceValues(t, c, "t", 0, "a", "b", "c")
	gate := make(chan struct{})
	var held atomic.Bool
	fc.SetIntercept(func(_ string, ft quic.FrameType, _ any) clienttest.Action {
		if ft == wire.TypeFetch && held.CompareAndSwap(false, true) {
			<-gate
		}
		return clienttest.Action{}
	})
	defer close(gate)
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	tp := TopicPartition{"t", 0}
	cs.Assign([]TopicPartition{tp}, 0)
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	cs.Poll(ctx)
	cancel()
	var call *fetchCall
	for f := range cs.inflight {
		call = f
	}
	if call == nil {
		t.Fatal("no fetch in flight")
	}
	cs.Unassign([]TopicPartition{tp})
	cs.Assign([]TopicPartition{tp}, 1)
	if vs := values(pollN(t, cs, 2)); !slices.Equal(vs, []string{"b", "c"}) {
		t.Fatalf("after assigning it again at 1: %v; want b c", vs)
	}
	// The abandoned fetch's answer (its context cancelled) reaches a later
	// Poll, which drops it: wait for that, and for no record with it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, still := cs.inflight[call]; !still {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned fetch is still in flight")
		}
		ctx, cancel := context.WithTimeout(testCtx(t), 20*time.Millisecond)
		msgs, _ := cs.Poll(ctx)
		cancel()
		if len(msgs) > 0 {
			t.Fatalf("records after b c: %v", values(msgs))
		}
	}
}
