package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/client"
)

// TestRecreatedTopicExposesAcknowledgedRecords: on a one-node cluster, a
// topic deleted and created again under its name takes records with
// acks=all, and every acknowledged one is below the new partitions' high
// watermarks (ListOffsets latest) at once: acknowledged at the offsets the
// new log holds them, none at the deleted topic's.
//
// The old topic's replica stays open from the image's delete until the
// node's reconcile stops it, and CreateTopic may return in between: produce
// served by it acknowledged records at offsets 2500 and on of the deleted
// log, lost with it, while the new partition's HW stayed at what reached it
// (0 or 584 of 2000; 11 runs in 40 failed so).
func TestRecreatedTopicExposesAcknowledgedRecords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 1)
	tc.waitAlive(1)
	c := tc.client(ctx)
	spec := client.TopicSpec{Name: "payments", Partitions: 2, ReplicationFactor: 1, MinISR: 1}
	createTopic(ctx, t, tc, c, spec)
	for p := range spec.Partitions {
		produceAcked(ctx, t, c, "payments", p, 2500)
	}
	if err := c.Admin().DeleteTopic(ctx, "payments"); err != nil {
		t.Fatal(err)
	}
	createTopic(ctx, t, tc, c, spec)
	const n = 2000
	for p := range spec.Partitions {
		if last := produceAcked(ctx, t, c, "payments", p, n); last != n-1 {
			t.Errorf("partition %d: the last of %d records acknowledged at offset %d; want %d", p, n, last, n-1)
		}
	}
	hws, err := c.Admin().ListOffsets(ctx, "payments", client.SeekEnd)
	if err != nil {
		t.Fatal(err)
	}
	for p := range spec.Partitions {
		if hws[p] != n {
			t.Errorf("partition %d: high watermark %d after %d records acknowledged with acks=all; want %d", p, hws[p], n, n)
		}
	}
}

// produceAcked produces n records to topic's partition p with acks=all and
// returns the highest offset acknowledged.
func produceAcked(ctx context.Context, t *testing.T, c *client.Client, topic string, p int32, n int) int64 {
	t.Helper()
	prod, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close(ctx)
	ds := make(chan client.Delivery, n)
	for i := range n {
		rec := &client.Record{Topic: topic, Partition: p, PartitionSet: true, Value: []byte(fmt.Sprintf("v%d-%d", p, i))}
		if err := prod.Produce(ctx, rec, func(d client.Delivery) { ds <- d }); err != nil {
			t.Fatal(err)
		}
	}
	last := int64(-1)
	for range n {
		d := <-ds
		if d.Err != nil {
			t.Fatal(d.Err)
		}
		last = max(last, d.Offset)
	}
	return last
}
