package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// A consumer that names its rack reads from the in-sync follower there
// (KIP-392): the leader, in another rack, names that follower, which serves
// every record in order, each once; the leader serves only the first fetch.
// When the follower dies the consumer goes back to the leader and reads on
// without a gap or a repeat.
func TestConsumerReadsFromTheFollowerInItsRack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	racks := map[int32]string{1: "az1", 2: "az2", 3: "az3"}
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		c.Rack = racks[c.ID]
		withMetrics(c)
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	leader := waitLeader(t, tc, "payments", 0)
	follower := leader%3 + 1
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := p.ProduceSync(ctx, &client.Record{Topic: "payments", Partition: 0, PartitionSet: true, Value: fmt.Appendf(nil, "r%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, 50)
	fetches := func(id int32) float64 {
		return value(t, scrape(t, tc.node(id).MetricsAddr()), "paymentlog_fetch_requests_total")
	}
	leaderBefore, followerBefore := fetches(leader), fetches(follower)

	cons := c.NewConsumer(client.ConsumerConfig{Rack: racks[follower], MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, 0)
	next := 0
	read := func(until int) {
		t.Helper()
		for next < until {
			msgs, err := cons.Poll(ctx)
			if err != nil {
				t.Fatalf("poll at %d: %v", next, err)
			}
			for _, m := range msgs {
				if want := fmt.Sprintf("r%d", next); string(m.Value) != want || m.Offset != int64(next) {
					t.Fatalf("read %q at %d, want %q at %d", m.Value, m.Offset, want, next)
				}
				next++
			}
		}
	}
	read(50)
	fromLeader, fromFollower := fetches(leader)-leaderBefore, fetches(follower)-followerBefore
	t.Logf("50 records: %v fetches answered by the leader (node %d), %v by the follower (node %d)", fromLeader, leader, fromFollower, follower)
	if fromFollower < 1 || fromLeader > 2 {
		t.Fatalf("fetches: %v from the leader (node %d), %v from the follower in the consumer's rack (node %d)", fromLeader, leader, fromFollower, follower)
	}

	tc.kill(follower)
	produce(50, 80)
	read(80)
	if got := fetches(leader) - leaderBefore; got <= fromLeader {
		t.Fatalf("the leader served %v fetches after the follower died, as many as before", got)
	}
}
