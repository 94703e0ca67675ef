package client

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// fakeClientMaxAge is mustFakeClient with a short MetadataMaxAge.
func fakeClientMaxAge(tb testing.TB, fc *clienttest.Cluster, maxAge time.Duration) *Client {
	tb.Helper()
	c := newWithCaller(Config{Bootstrap: fc.Addrs(), HedgeDelay: 20 * time.Millisecond, MetadataMaxAge: maxAge,
		Logger: testLogger(tb)}, fc)
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// TestRunningProducerWritesToAddedPartitions: a producer that keeps running
// while a topic grows from 2 to 5 partitions writes to the new partitions
// once its metadata is MetadataMaxAge old (no failure triggers a refresh
// here), and keyed records then go to hash(key) % 5. Every record is written
// once.
func TestRunningProducerWritesToAddedPartitions(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	c := fakeClientMaxAge(t, fc, 50*time.Millisecond)
	p, err := c.NewProducer(ProducerConfig{Linger: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	keys := map[string]bool{}
	produce := func(i int) {
		t.Helper()
		k := fmt.Sprintf("k%d", i)
		keys[k] = true
		if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Key: []byte(k), Value: []byte(k)}); err != nil {
			t.Fatal(err)
		}
	}
	i := 0
	for ; i < 20; i++ {
		produce(i)
	}
	fc.AddPartitions("t", 5)
	deadline := time.Now().Add(10 * time.Second)
	for len(fc.Records("t", 2))+len(fc.Records("t", 3))+len(fc.Records("t", 4)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no record in the added partitions after %d records over 10s", i)
		}
		produce(i)
		i++
		time.Sleep(5 * time.Millisecond)
	}
	// From now on every keyed record goes to hash(key) % 5.
	after := i
	for ; i < after+50; i++ {
		produce(i)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for part := int32(0); part < 5; part++ {
		for _, r := range fc.Records("t", part) {
			k := string(r.Key)
			seen[k]++
			var n int
			fmt.Sscanf(k, "k%d", &n)
			if n >= after && KeyPartition(r.Key, 5) != part {
				t.Errorf("%s in partition %d after the change, hash %% 5 is %d", k, part, KeyPartition(r.Key, 5))
			}
			if KeyPartition(r.Key, 5) != part && KeyPartition(r.Key, 2) != part {
				t.Errorf("%s in partition %d: neither hash %% 2 nor hash %% 5", k, part)
			}
		}
	}
	for k := range keys {
		if seen[k] != 1 {
			t.Errorf("%s written %d times", k, seen[k])
		}
	}
}

// TestConsumerAssignNewPartitions: a consumer following a topic picks up
// partitions added while it runs and reads them from the beginning.
func TestConsumerAssignNewPartitions(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	c := fakeClientMaxAge(t, fc, 50*time.Millisecond)
	ctx := testCtx(t)
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond})
	defer cs.Close()
	if _, err := cs.AssignTopic(ctx, "t", SeekBeginning); err != nil {
		t.Fatal(err)
	}
	if got := cs.AssignNewPartitions("t", SeekBeginning); len(got) != 0 {
		t.Fatalf("nothing new yet, got %v", got)
	}
	fc.AddPartitions("t", 4)
	p, err := c.NewProducer(ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for part := int32(0); part < 4; part++ {
		if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Partition: part, PartitionSet: true, Value: []byte(fmt.Sprint(part))}); err != nil {
			t.Fatal(err)
		}
	}
	got := map[int32]bool{}
	var added []TopicPartition
	for len(got) < 4 {
		added = append(added, cs.AssignNewPartitions("t", SeekBeginning)...)
		msgs, err := cs.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			got[m.Partition] = true
		}
	}
	if fmt.Sprint(added) != "[t/2 t/3]" {
		t.Fatalf("added %v, want [t/2 t/3]", added)
	}
}

// TestAdminCreatePartitions: success waits for the partitions; a count
// that does not grow is refused with InvalidPartitions; a retry after an
// attempt whose answer was lost (it did add the partitions) succeeds.
func TestAdminCreatePartitions(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	c := mustFakeClient(t, fc)
	ctx := testCtx(t)
	a := c.Admin()
	if err := a.CreatePartitions(ctx, "t", 3); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.PartitionCount(ctx, "t"); n != 3 {
		t.Fatalf("%d partitions after the call, want 3", n)
	}
	err := a.CreatePartitions(ctx, "t", 3)
	if ErrorCode(err) != wire.InvalidPartitions || !strings.Contains(err.Error(), "already has 3 partitions") {
		t.Fatalf("same count again: %v", err)
	}
	if err := a.CreatePartitions(ctx, "nope", 3); ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("unknown topic: %v", err)
	}
	var dropped atomic.Bool
	fc.SetIntercept(func(addr string, ft quic.FrameType, req any) clienttest.Action {
		if ft == wire.TypeCreatePartitions && dropped.CompareAndSwap(false, true) {
			return clienttest.Action{Kind: clienttest.DropResponse}
		}
		return clienttest.Action{}
	})
	if err := a.CreatePartitions(ctx, "t", 5); err != nil {
		t.Fatalf("retry after a lost answer: %v", err)
	}
	if n := fc.Calls(wire.TypeCreatePartitions); n != 5 {
		t.Fatalf("%d CreatePartitions calls, want 5 (one retry after the lost answer)", n)
	}
	if n, _ := c.PartitionCount(ctx, "t"); n != 5 {
		t.Fatalf("%d partitions, want 5", n)
	}
}
