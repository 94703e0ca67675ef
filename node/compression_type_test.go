package node_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/segment"
)

// storedCodecs reads node id's segment files of partition 0 of topic with
// the log dump's code and returns the compression of each batch whose base
// offset is in [from, to).
func storedCodecs(t *testing.T, tc *testCluster, id int32, topic string, from, to int64) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(tc.dir, fmt.Sprintf("node%d", id), topic+"-0", "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("node %d: segment files of %s: %v, %v", id, topic, files, err)
	}
	line := regexp.MustCompile(`^baseOffset: (\d+) .* compression: (\S+) `)
	var out []string
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := f.Stat()
		if err != nil {
			t.Fatal(err)
		}
		var dump bytes.Buffer
		s, err := segment.DumpLog(&dump, f, fi.Size(), segment.DumpOptions{})
		f.Close()
		if err != nil || s.Corrupt {
			t.Fatalf("node %d: dump of %s: %v (%s)", id, name, err, s.End)
		}
		for _, l := range bytes.Split(dump.Bytes(), []byte("\n")) {
			m := line.FindSubmatch(l)
			if m == nil {
				continue
			}
			if base, _ := strconv.ParseInt(string(m[1]), 10, 64); base >= from && base < to {
				out = append(out, string(m[2]))
			}
		}
	}
	return out
}

// A topic created with compression.type=zstd, written by an idempotent
// producer that does not compress: every replica's segment files hold zstd
// batches (the followers copy what the leader rewrote), a consumer reads
// every record, and the leader counts the batches it rewrote on /metrics. Altered to
// lz4, the batches produced next are stored in lz4, without a restart.
func TestTopicCompressionType(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, withMetrics)
	tc.waitAlive(3)
	c := tc.client(ctx)
	const topic = "payments"
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"compression.type": "zstd"}})
	p, err := c.NewProducer(client.ProducerConfig{Acks: client.AcksAll, Linger: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	payment := func(i int) string {
		return fmt.Sprintf(`{"payment_id":"pay_%06d","amount_minor":%d,"currency":"EUR","status":"captured"}`, i, 100+i)
	}
	produce := func(from, to int) {
		t.Helper()
		done := make(chan error, to-from)
		for i := from; i < to; i++ {
			err := p.Produce(ctx, &client.Record{Topic: topic, Partition: 0, PartitionSet: true, Value: []byte(payment(i))},
				func(d client.Delivery) { done <- d.Err })
			if err != nil {
				t.Fatal(err)
			}
		}
		for range to - from {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
	allHold := func(n int64) {
		t.Helper()
		waitFor(t, fmt.Sprintf("every replica holds %d records", n), 30*time.Second, func() bool {
			for _, nd := range tc.running() {
				if hw, _, leo, ok := nd.Broker().PartitionInfo(topic, 0); !ok || hw != n || leo != n {
					return false
				}
			}
			return true
		})
	}
	// onlyCodec checks that every node stores the batches of offsets
	// [from, to) in codec, and returns how many batches that is on each.
	onlyCodec := func(from, to int64, codec string) int {
		t.Helper()
		n := -1
		for id := int32(1); id <= 3; id++ {
			got := storedCodecs(t, tc, id, topic, from, to)
			for _, c := range got {
				if c != codec {
					t.Fatalf("node %d stores the batches of offsets %d to %d as %v, want every one %s", id, from, to-1, got, codec)
				}
			}
			if len(got) == 0 || (n >= 0 && len(got) != n) {
				t.Fatalf("node %d holds %d batches of offsets %d to %d, another node %d", id, len(got), from, to-1, n)
			}
			n = len(got)
		}
		return n
	}

	produce(0, 300)
	if st := p.Stats(); st.SentBytes != st.EncodedBytes {
		t.Fatalf("the producer compressed (%d bytes encoded, %d sent): the test needs it not to", st.EncodedBytes, st.SentBytes)
	}
	allHold(300)
	zstdBatches := onlyCodec(0, 300, "zstd")
	// The leader counts what it rewrote (a retried duplicate would not
	// count), the followers nothing: they copied.
	var rewritten, sent, stored float64
	for _, addr := range metricsAddrs(tc) {
		e := scrape(t, addr)
		rewritten += value(t, e, "paymentlog_recompressed_batches_total")
		sent += value(t, e, "paymentlog_recompressed_bytes_total", "bytes", "sent")
		stored += value(t, e, "paymentlog_recompressed_bytes_total", "bytes", "stored")
	}
	if rewritten != float64(zstdBatches) || stored == 0 || stored*2 > sent {
		t.Fatalf("/metrics: %v batches rewritten (%v bytes sent, %v stored), %d stored in zstd", rewritten, sent, stored, zstdBatches)
	}

	if err := c.Admin().AlterTopicConfigs(ctx, topic, client.ConfigChange{Set: map[string]string{"compression.type": "lz4"}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every node applies compression.type=lz4", 10*time.Second, func() bool {
		for _, nd := range tc.running() {
			if pol, ok := nd.Broker().PartitionMessages(topic, 0); !ok || !pol.Recompress || pol.Codec != segment.CodecLZ4 {
				return false
			}
		}
		return true
	})
	produce(300, 400)
	allHold(400)
	onlyCodec(300, 400, "lz4")
	onlyCodec(0, 300, "zstd") // the batches stored before stay as they are

	got, err := consumeFrom(ctx, c, topic, 400)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got[:400] {
		if v != payment(i) {
			t.Fatalf("offset %d holds %q, want %q", i, v, payment(i))
		}
	}
}
