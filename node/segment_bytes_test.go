package node_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// A topic's segment.bytes sets the size of its partitions' segments on every
// replica; the node's --segment-bytes (here 256 MiB, the default) is only
// the default. The config was accepted and stored, then ignored: every
// segment was the node's size, so retention (whole segments) could not cut
// below it.
func TestTopicSegmentBytesAppliedByTheNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"segment.bytes": "1048576"}})
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	value := []byte(strings.Repeat("p", 8<<10))
	const total = 384 // 3 MiB: at least three segments of 1 MiB
	for range total {
		if err := p.Produce(ctx, &client.Record{Topic: "payments", Value: value}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every replica has the records", 30*time.Second, func() bool {
		for _, n := range tc.running() {
			if hw, _, leo, ok := n.Broker().PartitionInfo("payments", 0); !ok || hw != total || leo != total {
				return false
			}
		}
		return true
	})
	for id := int32(1); id <= 3; id++ {
		logs, err := filepath.Glob(filepath.Join(tc.dir, "node"+string(rune('0'+id)), "payments-0", "*.log"))
		if err != nil {
			t.Fatal(err)
		}
		if len(logs) < 3 {
			t.Fatalf("node %d: %d segments for 3 MiB with segment.bytes 1 MiB: %v", id, len(logs), logs)
		}
	}
}

// A topic's segment.ms, set on a running topic, seals each replica's
// active segment at the first append once it has been open that long.
func TestTopicSegmentMsAppliedByTheNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	produced := int64(0)
	produce := func() {
		t.Helper()
		produceKiB(ctx, t, c, 1)
		produced++
	}
	// segments is the fewest segments a replica holds, once all have every
	// record.
	segments := func() int {
		waitFor(t, "every replica has the records", 30*time.Second, func() bool {
			for _, n := range tc.running() {
				if hw, _, leo, ok := n.Broker().PartitionInfo("payments", 0); !ok || hw != produced || leo != produced {
					return false
				}
			}
			return true
		})
		fewest := 1 << 30
		for id := int32(1); id <= 3; id++ {
			logs, err := filepath.Glob(filepath.Join(tc.dir, "node"+string(rune('0'+id)), "payments-0", "*.log"))
			if err != nil {
				t.Fatal(err)
			}
			fewest = min(fewest, len(logs))
		}
		return fewest
	}
	start := time.Now() // before the first append opens the active segment
	produce()
	if err := c.Admin().AlterTopicConfigs(ctx, "payments", client.ConfigChange{Set: map[string]string{"segment.ms": "200"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every replica rolled by segment.ms", 30*time.Second, func() bool {
		produce()
		return segments() >= 2
	})
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Fatalf("rolled after %v, before segment.ms", took)
	}
}
