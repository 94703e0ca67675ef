package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// TestFirstProduceAfterCreateIsNotRefused: once CreateTopic (and
// CreatePartitions) returns, every partition's leader has taken it, so the
// first produce to each new partition is answered at once, not refused
// UnknownTopicOrPartition (its broker still opening the log) or
// UnknownLeaderEpoch (its broker still at an older state) and retried.
// Before the calls waited for every node's broker offset, 2 to 6 of 60
// first produces here were refused.
func TestFirstProduceAfterCreateIsNotRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	produce := func(topic string, parts ...int32) {
		t.Helper()
		p, err := c.NewProducer(client.ProducerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close(ctx)
		for _, part := range parts {
			if err := p.Produce(ctx, &client.Record{Topic: topic, Partition: part, Value: []byte("payment")}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		st := p.Stats()
		for _, code := range []wire.ErrorCode{wire.UnknownTopicOrPartition, wire.UnknownLeaderEpoch} {
			if n := st.FailedByCause[code.String()]; n > 0 {
				t.Fatalf("%s: %d first produce requests refused %v (all refusals: %v)", topic, n, code, st.FailedByCause)
			}
		}
	}
	for i := range 10 {
		topic := fmt.Sprintf("payments-%d", i)
		createTopic(ctx, t, tc, c, client.TopicSpec{Name: topic, Partitions: 2, ReplicationFactor: 3, MinISR: 2})
		produce(topic, 0, 1)
		if err := c.Admin().CreatePartitions(ctx, topic, 4); err != nil {
			t.Fatal(err)
		}
		produce(topic, 2, 3)
	}
}
