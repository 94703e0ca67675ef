package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/client"
)

// With acks=0 the leader still answers, once it has appended the batch, and
// each delivery reports the offset its record was written at (the client
// documentation said -1: no offsets). The records are where they say.
func TestAcksNoneReportsOffsets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 1)
	tc.waitAlive(1)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksNone})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	byOffset := map[int64]string{}
	for i := range 20 {
		v := fmt.Sprintf("payment-%d", i)
		d, err := p.ProduceSync(ctx, &client.Record{Topic: "payments", Value: []byte(v)})
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if d.Offset != int64(i) || d.Partition != 0 {
			t.Fatalf("record %d delivered at partition %d offset %d; want partition 0 offset %d", i, d.Partition, d.Offset, i)
		}
		byOffset[d.Offset] = v
	}
	readBackPayments(ctx, t, c, byOffset)
}
