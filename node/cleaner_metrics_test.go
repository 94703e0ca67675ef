package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// A node with two log cleaner threads compacts both partitions of a
// compacted topic, and /metrics carries the last pass's gauges: the time
// since it ended (within a few intervals: the loop runs), its longest
// partition, the highest dirty ratio it saw (at most 1), no compaction
// delay (no max.compaction.lag.ms) and no uncleanable partition. The
// cluster's log.cleaner.threads sets the node's thread count (clamped to
// what its dedupe buffer gives 1 MiB a thread), and deleting it brings back
// the node's --log-cleaner-threads.
func TestCleanerThreadsAndTheirMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const interval = 100 * time.Millisecond
	tc := mustStartClusterWith(t, 1, func(cfg *node.Config) {
		withMetrics(cfg)
		cfg.SegmentBytes = 1 << 20
		cfg.LogCleanerInterval = interval
		cfg.LogCleanerThreads = 2
	})
	tc.waitAlive(1)
	addr := metricsAddrs(tc)[1]
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "accounts", Partitions: 2, ReplicationFactor: 1, MinISR: 1,
		Configs: map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0"}})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	pad := strings.Repeat("p", 8<<10)
	for i := range 400 { // about 1.6 MiB per partition: a sealed segment each
		r := &client.Record{Topic: "accounts", Partition: int32(i % 2), PartitionSet: true, Key: []byte(fmt.Sprint("acct-", i%8)), Value: []byte(fmt.Sprint(i, pad))}
		if err := p.Produce(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "both partitions compacted", 30*time.Second, func() bool {
		return value(t, scrape(t, addr), "paymentlog_log_cleaner_passes_total") >= 2
	})
	e := scrape(t, addr)
	since := value(t, e, "paymentlog_log_cleaner_time_since_last_run_seconds")
	ratio := value(t, e, "paymentlog_log_cleaner_max_dirty_ratio")
	if since < 0 || since > 10*interval.Seconds() || ratio < 0 || ratio > 1 ||
		value(t, e, "paymentlog_log_cleaner_max_clean_seconds") < 0 ||
		value(t, e, "paymentlog_log_cleaner_max_compaction_delay_seconds") != 0 ||
		value(t, e, "paymentlog_log_cleaner_uncleanable_partitions") != 0 ||
		value(t, e, "paymentlog_log_cleaner_uncleanable_bytes") != 0 ||
		value(t, e, "paymentlog_log_cleaner_threads") != 2 ||
		value(t, e, "paymentlog_log_cleaner_failures_total") != 0 {
		t.Fatalf("cleaner gauges: since last run %vs, max dirty ratio %v, max clean %vs, delay %vs, uncleanable %v", since, ratio,
			value(t, e, "paymentlog_log_cleaner_max_clean_seconds"), value(t, e, "paymentlog_log_cleaner_max_compaction_delay_seconds"),
			value(t, e, "paymentlog_log_cleaner_uncleanable_partitions"))
	}
	for _, ch := range []struct {
		change client.ConfigChange
		want   float64
	}{
		{client.ConfigChange{Set: map[string]string{"log.cleaner.threads": "3"}}, 3},
		{client.ConfigChange{Set: map[string]string{"log.cleaner.threads": "1000"}}, 128}, // 128 MiB of dedupe buffer
		{client.ConfigChange{Delete: []string{"log.cleaner.threads"}}, 2},
	} {
		if err := c.Admin().AlterClusterConfigs(ctx, ch.change); err != nil {
			t.Fatal(err)
		}
		if v := value(t, scrape(t, addr), "paymentlog_log_cleaner_threads"); v != ch.want {
			t.Fatalf("cleaner threads %v after %+v, want %v", v, ch.change, ch.want)
		}
	}
}
