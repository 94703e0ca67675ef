package node_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// withMetrics is a configure function for mustStartClusterWith: every node
// serves /metrics on a port of its own choosing (a port picked free
// beforehand may be taken by another process before the node binds it: seen
// under load as "bind: address already in use").
func withMetrics(cfg *node.Config) { cfg.MetricsAddr = "127.0.0.1:0" }

// metricsAddrs returns each running node's /metrics address.
func metricsAddrs(tc *testCluster) map[int32]string {
	addrs := map[int32]string{}
	for _, n := range tc.running() {
		addrs[n.ID()] = n.MetricsAddr()
	}
	return addrs
}

// TestMetricsShowPartitionsAndTraffic: /metrics on every node reports the
// partitions it leads and follows, no under-replicated partition once the
// ISR is full, and the produce requests, bytes and QUIC packets it handled.
func TestMetricsShowPartitionsAndTraffic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, withMetrics)
	addrs := metricsAddrs(tc)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 3, ReplicationFactor: 3, MinISR: 2})
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	for i := range 300 {
		if err := p.Produce(ctx, &client.Record{Topic: "payments", Key: []byte(fmt.Sprint(i)), Value: make([]byte, 100)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	metric := func(body, name string) int64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\d+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no %s in /metrics:\n%s", name, body)
		}
		v, _ := strconv.ParseInt(m[1], 10, 64)
		return v
	}
	// One view of all three nodes: a leadership that moves between two
	// reads (a loaded machine) counts twice or not at all.
	var leaders, followers, produced int64
	bodies := map[int32]string{}
	waitFor(t, "an in-sync view of every partition, with one leader each", 10*time.Second, func() bool {
		leaders, followers, produced = 0, 0, 0
		for id := int32(1); id <= 3; id++ {
			resp, err := http.Get("http://" + addrs[id] + "/metrics")
			if err != nil {
				return false
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body := string(b)
			if metric(body, "paymentlog_under_replicated_partitions") != 0 {
				return false
			}
			bodies[id] = body
			leaders += metric(body, `paymentlog_partitions{role="leader"}`)
			followers += metric(body, `paymentlog_partitions{role="follower"}`)
			produced += metric(body, "paymentlog_produce_bytes_total")
		}
		return leaders == 3 && followers == 6
	})
	for id, body := range bodies {
		if metric(body, "paymentlog_quic_packets_sent_total") == 0 || metric(body, "paymentlog_quic_connections") == 0 {
			t.Fatalf("node %d shows no QUIC traffic:\n%s", id, body)
		}
	}
	if leaders != 3 || followers != 6 || produced < 300*100 {
		t.Fatalf("across nodes: %d leaders, %d followers, %d bytes produced; want 3, 6, >= 30000", leaders, followers, produced)
	}
}
