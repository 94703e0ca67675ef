package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// TestTopicRetentionBytesAppliedByTheNodes: a topic created with
// retention.bytes gets it applied by every replica's retention loop (a short
// --retention-check-interval here): each replica deletes its oldest
// segments, describe shows the new log start, and a consumer from the
// beginning reads exactly the records from there to the HW. Before, the
// config was accepted and nothing was ever deleted.
func TestTopicRetentionBytesAppliedByTheNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		cfg.SegmentBytes = 1 << 20
		cfg.RetentionCheckInterval = 100 * time.Millisecond
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"retention.bytes": "1048576"}})
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	value := []byte(strings.Repeat("p", 8<<10))
	const total = 512 // 4 MiB: four segments
	for range total {
		if err := p.Produce(ctx, &client.Record{Topic: "payments", Value: value}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var start int64
	waitFor(t, "every replica applied retention.bytes", 30*time.Second, func() bool {
		var starts []int64
		for _, n := range tc.running() {
			hw, s, _, ok := n.Broker().PartitionInfo("payments", 0)
			if !ok || hw != total || s == 0 {
				return false
			}
			starts = append(starts, s)
		}
		start = starts[0]
		for _, s := range starts {
			if s != start {
				return false
			}
		}
		return len(starts) == 3
	})
	d, err := c.Admin().DescribeTopic(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	// A replica's next retention pass may still move the start up (the
	// three can agree between two passes): never down.
	if got := d.Partitions[0].LogStartOffset; got < start {
		t.Fatalf("describe: log_start_offset %d, below %d", got, start)
	}
	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, client.SeekBeginning)
	next := start
	first := true // the first record read from the beginning
	for moved := 0; next < total; {
		msgs, err := cons.Poll(ctx)
		var oor *client.OffsetOutOfRangeError
		if errors.As(err, &oor) && oor.Start > next && moved < 3 {
			// Retention moved the log start past the position meanwhile:
			// read on from the new start.
			moved++
			next = oor.Start
			cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, next)
			continue
		}
		if err != nil {
			t.Fatalf("poll at %d: %v", next, err)
		}
		for _, m := range msgs {
			if first && m.Offset > next && m.Offset < total {
				// The next retention pass moved the start up before the
				// consumer asked where the beginning is.
				t.Logf("the log start moved from %d to %d before the first read", next, m.Offset)
				next = m.Offset
			}
			first = false
			if m.Offset != next {
				t.Fatalf("read offset %d, want %d", m.Offset, next)
			}
			next++
		}
	}
}
