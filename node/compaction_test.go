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

// TestCompactedTopicCleanedByTheNodes: a topic created with
// cleanup.policy=compact gets every replica's log cleaner (a short
// --log-cleaner-interval here): /metrics on each node counts passes,
// removed records and reclaimed bytes, and a consumer from the beginning
// reads fewer records than were written, in offset order, the latest of
// every key among them. The leader refuses a record without a key.
func TestCompactedTopicCleanedByTheNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		withMetrics(cfg)
		cfg.SegmentBytes = 1 << 20
		cfg.LogCleanerInterval = 100 * time.Millisecond
	})
	tc.waitAlive(3)
	addrs := metricsAddrs(tc)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "accounts", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0", "delete.retention.ms": "0"}})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if _, err := p.ProduceSync(ctx, &client.Record{Topic: "accounts", Value: []byte("no key")}); client.ErrorCode(err) != wire.InvalidRecord {
		t.Fatalf("keyless record: %v, want InvalidRecord", err)
	}
	const total, keys = 512, 8 // 4 MiB: four segments
	pad := strings.Repeat("p", 8<<10)
	latest := map[string]string{}
	for i := range total {
		k, v := fmt.Sprint("acct-", i%keys), fmt.Sprint(i, pad)
		if err := p.Produce(ctx, &client.Record{Topic: "accounts", Key: []byte(k), Value: []byte(v)}, nil); err != nil {
			t.Fatal(err)
		}
		latest[k] = v
		if i%64 == 0 { // an account that is closed below
			if err := p.Produce(ctx, &client.Record{Topic: "accounts", Key: []byte("closed"), Value: []byte(v)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The tombstone (a nil value) deletes the key; with
	// delete.retention.ms=0 it goes too once a pass has cleaned past it.
	if err := p.Produce(ctx, &client.Record{Topic: "accounts", Key: []byte("closed")}, nil); err != nil {
		t.Fatal(err)
	}
	const end1 = total + total/64 + 1
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for id, addr := range addrs {
		waitFor(t, fmt.Sprintf("node %d's cleaner compacted accounts-0", id), 30*time.Second, func() bool {
			e := scrape(t, addr)
			return value(t, e, "paymentlog_log_cleaner_passes_total") > 0 &&
				value(t, e, "paymentlog_log_cleaner_removed_records_total") > 0 &&
				value(t, e, "paymentlog_log_cleaner_bytes_reclaimed_total") > 0
		})
		if f := value(t, scrape(t, addr), "paymentlog_log_cleaner_failures_total"); f != 0 {
			t.Fatalf("node %d: %v cleaner failures", id, f)
		}
		if s := value(t, scrape(t, addr), "paymentlog_log_cleaner_throttle_time_seconds_total"); s != 0 {
			t.Fatalf("node %d: the unthrottled cleaner slept %vs", id, s)
		}
	}
	// The cluster's log.cleaner.io.max.bytes.per.second reaches every
	// node's cleaner, and deleting it brings back each node's flag (0).
	for _, ch := range []struct {
		change client.ConfigChange
		want   float64
	}{
		{client.ConfigChange{Set: map[string]string{"log.cleaner.io.max.bytes.per.second": "1048576"}}, 1 << 20},
		{client.ConfigChange{Delete: []string{"log.cleaner.io.max.bytes.per.second"}}, 0},
	} {
		if err := c.Admin().AlterClusterConfigs(ctx, ch.change); err != nil {
			t.Fatal(err)
		}
		for id, addr := range addrs {
			if v := value(t, scrape(t, addr), "paymentlog_log_cleaner_io_max_bytes_per_second"); v != ch.want {
				t.Fatalf("node %d's cleaner throttle %v after %+v, want %v", id, v, ch.change, ch.want)
			}
		}
	}

	// readBack reads the partition from the beginning up to end, checks
	// that offsets only grow and that every key's latest value is there,
	// and returns how many records it read.
	readBack := func(end int64) (int, map[string]string) {
		t.Helper()
		cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
		defer cons.Close()
		cons.Assign([]client.TopicPartition{{Topic: "accounts", Partition: 0}}, client.SeekBeginning)
		got := map[string]string{}
		read, last := 0, int64(-1)
		for last < end-1 {
			msgs, err := cons.Poll(ctx)
			if err != nil {
				t.Fatalf("poll after %d: %v", last, err)
			}
			for _, m := range msgs {
				if m.Offset <= last || m.Offset >= end {
					t.Fatalf("read offset %d after %d", m.Offset, last)
				}
				last = m.Offset
				read++
				if m.Value == nil {
					got[string(m.Key)] = "<tombstone>"
				} else {
					got[string(m.Key)] = string(m.Value)
				}
			}
		}
		for k, v := range latest {
			if got[k] != v {
				t.Fatalf("%s: read %.12q last, want %.12q", k, got[k], v)
			}
		}
		return read, got
	}
	if read, got := readBack(end1); read >= end1 || got["closed"] != "<tombstone>" {
		t.Fatalf("read %d records of %d (nothing compacted?), closed account %.12q", read, end1, got["closed"])
	}

	// The leader dies: a compacted follower takes over, the producer goes
	// on, the survivors compact again, and the old leader comes back and
	// catches up from a compacted log.
	victim := waitLeader(t, tc, "accounts", 0)
	passes := map[int32]float64{}
	for id, addr := range addrs {
		passes[id] = value(t, scrape(t, addr), "paymentlog_log_cleaner_passes_total")
	}
	tc.kill(victim)
	const end2 = end1 + total
	for i := total; i < 2*total; i++ {
		k, v := fmt.Sprint("acct-", i%keys), fmt.Sprint(i, pad)
		if err := p.Produce(ctx, &client.Record{Topic: "accounts", Key: []byte(k), Value: []byte(v)}, nil); err != nil {
			t.Fatal(err)
		}
		latest[k] = v
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for id, addr := range addrs {
		if id == victim {
			continue
		}
		waitFor(t, fmt.Sprintf("node %d's cleaner compacted again", id), 30*time.Second, func() bool {
			return value(t, scrape(t, addr), "paymentlog_log_cleaner_passes_total") > passes[id]
		})
	}
	tc.start(victim)
	waitFor(t, fmt.Sprintf("node %d back in the ISR", victim), 30*time.Second, func() bool {
		tp, ok := tc.image().Topic("accounts")
		return ok && len(tp.Partitions[0].ISR) == 3
	})
	if read, _ := readBack(end2); read >= end2 {
		t.Fatalf("read %d records of %d after the failover: nothing compacted", read, end2)
	}
	// A tombstone goes in a pass that starts above it (it has been
	// cleaned past) and finds something dirty, as in Kafka: if the passes
	// so far cleaned all the sealed segments at once, more writes are
	// needed. Each round writes a segment's worth under another key.
	end := int64(end2)
	waitFor(t, "the tombstone removed", 30*time.Second, func() bool {
		_, got := readBack(end)
		if _, there := got["closed"]; !there {
			return true
		}
		const filler = 130 // more than a 1 MiB segment of 8 KiB records
		for i := range filler {
			if err := p.Produce(ctx, &client.Record{Topic: "accounts", Key: []byte("filler"), Value: []byte(fmt.Sprint(i, pad))}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		end += filler
		return false
	})
}
