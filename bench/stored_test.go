package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The bytes the leaders stored over a phase are the difference of two
// readings of the nodes' paymentlog_produce_bytes_total, summed; divided by
// the payload bytes they are the stored bytes per payload byte, reported
// in the table and the JSON with the codec, the payload and the CPU per
// payload MB. Without the counter on every node there is no figure rather
// than a wrong one.
func TestStoredBytesPerPayloadByte(t *testing.T) {
	var produced uint64 = 1_000_000
	withCounter := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "paymentlog_quic_packets_sent_total 10\npaymentlog_quic_packets_lost_total 0\npaymentlog_produce_bytes_total %d\n", produced)
	}))
	defer withCounter.Close()
	without := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "paymentlog_quic_packets_sent_total 10\npaymentlog_quic_packets_lost_total 0\n")
	}))
	defer without.Close()
	addr := func(s *httptest.Server) string { return strings.TrimPrefix(s.URL, "http://") }
	ctx := context.Background()
	nodes := map[int32]string{1: addr(withCounter), 2: addr(withCounter), 3: addr(withCounter)}

	before, err := scrapeNodes(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	produced += 25_000_000 // 75 MB over the three leaders
	after, err := scrapeNodes(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	res := &ThroughputResult{Compression: "zstd", Payload: PayloadPayments, CPU: &CPUUsage{NodesSeconds: 6, BenchSeconds: 3}}
	res.addStored(&phaseMeter{counters: before, end: after}, 300_000_000)
	if res.StoredBytes != 75_000_000 || res.StoredPerPayloadByte != 0.25 || res.NodeCPUMsPerMB != 20 || res.BenchCPUMsPerMB != 10 {
		t.Fatalf("%+v: want 75 MB stored, 0.25 per payload byte, nodes 20 ms and bench 10 ms per MB", res)
	}
	js, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"compression":"zstd"`, `"payload":"payments"`, `"leader_stored_bytes":75000000`,
		`"stored_bytes_per_payload_byte":0.25`, `"node_cpu_ms_per_payload_mb":20`, `"bench_cpu_ms_per_payload_mb":10`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s: %s", want, js)
		}
	}
	var table strings.Builder
	(&Report{Throughput: res}).WriteTable(&table)
	for _, want := range []string{"(payments payload)", "compression zstd\n",
		"0.250 bytes per payload byte on the leaders (75.0 MB for 300.0 MB of payload, compression zstd)", "nodes 20.0 ms + bench 10.0 ms"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}

	nodes[2] = addr(without)
	partial, err := scrapeNodes(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name          string
		before, after *nodeCounters
	}{{"a node without the counter", before, partial}, {"no readings", nil, nil}, {"the counter went back", after, before}} {
		res := &ThroughputResult{}
		res.addStored(&phaseMeter{counters: c.before, end: c.after}, 300_000_000)
		if js, _ := json.Marshal(res); res.StoredPerPayloadByte != 0 || strings.Contains(string(js), "stored") {
			t.Errorf("%s: %+v, JSON %s", c.name, res, js)
		}
	}
}
