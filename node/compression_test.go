package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
)

// Compressed batches end to end on three nodes: an idempotent producer
// compresses, the leader stores and the followers copy the compressed bytes,
// a consumer reads every record back in order, and a lookup by timestamp
// finds a record inside a compressed batch.
func TestCompressedProduceAndConsume(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	for _, codec := range []segment.Codec{segment.CodecLZ4, segment.CodecZstd} {
		topic := "payments-" + codec.String()
		createTopic(ctx, t, tc, c, client.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 3, MinISR: 2})
		p, err := c.NewProducer(client.ProducerConfig{Compression: codec, Linger: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.UnixMilli(1_800_000_000_000)
		done := make(chan error, 300)
		for i := range 300 {
			v := fmt.Sprintf(`{"payment_id":"pay_%06d","amount_minor":%d,"currency":"EUR","status":"captured"}`, i, 100+i)
			err := p.Produce(ctx, &client.Record{Topic: topic, Partition: 0, PartitionSet: true, Value: []byte(v),
				Timestamp: t0.Add(time.Duration(i) * time.Second)}, func(d client.Delivery) { done <- d.Err })
			if err != nil {
				t.Fatal(err)
			}
		}
		for range 300 {
			if err := <-done; err != nil {
				t.Fatalf("%v: %v", codec, err)
			}
		}
		st := p.Stats()
		p.Close(ctx)
		if st.SentBytes == 0 || st.SentBytes*2 > st.EncodedBytes {
			t.Fatalf("%v: %d batches sent as %d bytes, %d encoded: want them compressed to less than half", codec, st.Batches, st.SentBytes, st.EncodedBytes)
		}
		t.Logf("%v: %d batches, %d bytes encoded, %d sent (%.2f)", codec, st.Batches, st.EncodedBytes, st.SentBytes, float64(st.SentBytes)/float64(st.EncodedBytes))
		got, err := consumeFrom(ctx, c, topic, 300)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range got[:300] {
			if want := fmt.Sprintf(`{"payment_id":"pay_%06d","amount_minor":%d,"currency":"EUR","status":"captured"}`, i, 100+i); v != want {
				t.Fatalf("%v: offset %d holds %q, want %q", codec, i, v, want)
			}
		}
		offs, err := c.Admin().ListOffsets(ctx, topic, t0.Add(150*time.Second).UnixMilli())
		if err != nil || offs[0] != 150 {
			t.Fatalf("%v: offset for the 150th second: %v, %v; want 150", codec, offs, err)
		}
	}
}
