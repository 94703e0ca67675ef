package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/wire"
)

// quotaWorkload produces rounds×64 KiB to payments-0 as c, one flushed
// round at a time (so that each round is its own produce request), then
// reads it back 64 KiB per fetch, and returns how long each half took.
func quotaWorkload(ctx context.Context, t *testing.T, c *client.Client, rounds int) (produce, consume time.Duration) {
	t.Helper()
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	value := []byte(strings.Repeat("x", 1000))
	start := time.Now()
	for r := range rounds {
		for range 64 {
			if err := p.Produce(ctx, &client.Record{Topic: "payments", Partition: 0, PartitionSet: true, Value: value}, nil); err != nil {
				t.Fatalf("produce round %d: %v", r, err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatalf("flush round %d: %v", r, err)
		}
	}
	produce = time.Since(start)

	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond, PartitionMaxBytes: 64 << 10, MaxBytes: 64 << 10})
	defer cons.Close()
	end, err := c.Admin().ListOffsets(ctx, "payments", wire.Latest)
	if err != nil {
		t.Fatal(err)
	}
	from := end[0] - int64(rounds*64)
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, from)
	start = time.Now()
	for read := 0; read < rounds*64; {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		read += len(msgs)
	}
	return produce, time.Since(start)
}

// TestClientQuotasThrottle: a principal with a 128 KiB/s producer and
// consumer quota is held to it on the node it talks to (512 KiB take at
// least ~3 s each way beyond the 1 s burst: asserted loosely, >= 1.5 s, as
// a lower bound only), the answers carry the throttle and the node counts
// it; another principal without a quota is not throttled; deleting the
// quota lifts it at once.
func TestClientQuotasThrottle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	certs := mustACLCerts(t, 1, "admin", "batch", "checkout")
	tc := mustStartClusterWith(t, 1, func(c *node.Config) {
		c.TLSDir, c.CertName = certs, fmt.Sprintf("node%d", c.ID)
		withMetrics(c)
	})
	tc.waitAlive(1)
	admin := aclClient(ctx, t, tc, certs, "admin")
	createTopic(ctx, t, tc, admin, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	const rate = 128 << 10
	if err := admin.Admin().AlterClientQuotas(ctx, wire.QuotaEntry{Principal: "User:batch",
		Set: map[string]int64{wire.QuotaProducerByteRate: rate, wire.QuotaConsumerByteRate: rate}}); err != nil {
		t.Fatal(err)
	}
	qs, err := admin.Admin().DescribeClientQuotas(ctx)
	if err != nil || len(qs) != 1 || qs[0].Principal != "User:batch" || qs[0].Values[wire.QuotaProducerByteRate] != rate {
		t.Fatalf("DescribeClientQuotas: %+v, %v", qs, err)
	}
	throttled := func(req string) float64 {
		return value(t, scrape(t, tc.node(1).MetricsAddr()), "paymentlog_throttled_requests_total", "request", req)
	}

	// checkout has no quota: nothing is held back.
	quotaWorkload(ctx, t, aclClient(ctx, t, tc, certs, "checkout"), 8)
	if p, f := throttled("produce"), throttled("fetch"); p != 0 || f != 0 {
		t.Fatalf("throttled %v produce and %v fetch requests of a principal without a quota", p, f)
	}

	batch := aclClient(ctx, t, tc, certs, "batch")
	prod, cons := quotaWorkload(ctx, t, batch, 8)
	t.Logf("512 KiB at a 128 KiB/s quota: produced in %v, consumed in %v", prod, cons)
	if prod < 1500*time.Millisecond || cons < 1500*time.Millisecond {
		t.Fatalf("512 KiB at 128 KiB/s produced in %v, consumed in %v: not held to the quota", prod, cons)
	}
	if p, f := throttled("produce"), throttled("fetch"); p < 1 || f < 1 {
		t.Fatalf("throttled %v produce and %v fetch requests, want some of each", p, f)
	}

	// Deleted, the quota no longer applies, debt or not.
	if err := admin.Admin().AlterClientQuotas(ctx, wire.QuotaEntry{Principal: "User:batch",
		Delete: []string{wire.QuotaProducerByteRate, wire.QuotaConsumerByteRate}}); err != nil {
		t.Fatal(err)
	}
	before := throttled("produce") + throttled("fetch")
	quotaWorkload(ctx, t, batch, 8)
	if after := throttled("produce") + throttled("fetch"); after != before {
		t.Fatalf("%v requests throttled after the quota was deleted", after-before)
	}
	if qs, err := admin.Admin().DescribeClientQuotas(ctx); err != nil || len(qs) != 0 {
		t.Fatalf("quotas after the delete: %+v, %v", qs, err)
	}
}
