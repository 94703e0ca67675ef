package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestQUICLossFromNodeMetrics: the nodes' counters are summed from their
// /metrics text and a phase's loss and messages are the difference of two
// readings; a node without the QUIC counters gives no figure rather than a
// wrong one.
func TestQUICLossFromNodeMetrics(t *testing.T) {
	sent, lost := uint64(1000), uint64(3)
	produces, answers := uint64(10), uint64(40)
	waits, refused := uint64(5), uint64(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "paymentlog_node_id 1\npaymentlog_quic_packets_sent_total %d\npaymentlog_quic_packets_lost_total %d\ngo_goroutines 7\n", sent, lost)
		fmt.Fprintf(w, "paymentlog_produce_requests_total %d\npaymentlog_replica_fetch_responses_total %d\n", produces, answers)
		fmt.Fprintf(w, "paymentlog_produce_reorder_waits_total %d\npaymentlog_produce_reorder_refused_total %d\n", waits, refused)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	nodes := map[int32]string{1: addr, 2: addr}
	before, err := scrapeNodes(ctx, nodes)
	if err != nil || before == nil || before.loss.PacketsSent != 2000 || before.loss.PacketsLost != 6 {
		t.Fatalf("first reading %+v (%v), want 2000 sent, 6 lost", before, err)
	}
	sent, lost = 3000, 13
	produces, answers = 60, 240
	waits, refused = 12, 2
	after, err := scrapeNodes(ctx, nodes)
	d := after.since(before)
	if err != nil || d == nil || d.PacketsSent != 4000 || d.PacketsLost != 20 || d.LostPercent != 0.5 {
		t.Fatalf("phase %+v, want 4000 sent, 20 lost, 0.5%%", d)
	}
	m := after.messagesSince(before, 2*time.Second)
	if m == nil || m.ProduceRequests != 100 || m.ReplicaFetchAnswers != 400 || m.ProduceRequestsPerSec != 50 || m.AnswersPerProduce != 4 {
		t.Fatalf("messages %+v, want 100 produce requests (50/s), 400 answers (4 per produce)", m)
	}
	if m.ReorderWaits != 14 || m.ReorderRefused != 2 {
		t.Fatalf("messages %+v, want 14 batches that waited on the leaders, 2 refused after the wait", m)
	}
	m.addCPU(&CPUUsage{NodesSeconds: 0.25, BenchSeconds: 0.05, NodesSwitches: 11000, BenchSwitches: 3500})
	if m.NodeCPUMsPerProduce != 2.5 || m.BenchCPUMsPerProduce != 0.5 || m.NodeSwitchesPerProduce != 110 || m.BenchSwitchesPerProduce != 35 {
		t.Fatalf("CPU per produce request %+v, want nodes 2.5 ms and 110 switches, bench 0.5 ms and 35", m)
	}
	var none *Messages
	none.addCPU(&CPUUsage{NodesSeconds: 1}) // no messages measured: nothing to do
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "paymentlog_node_id 2")
	}))
	defer bare.Close()
	if q, err := scrapeNodes(ctx, map[int32]string{1: addr, 2: strings.TrimPrefix(bare.URL, "http://")}); q != nil || err == nil {
		t.Fatalf("a node without QUIC counters gave %+v (%v)", q, err)
	}
	if q, err := scrapeNodes(ctx, nil); q != nil || err != nil || q.since(before) != nil || q.messagesSince(before, time.Second) != nil {
		t.Fatalf("no metrics addresses gave %+v (%v)", q, err)
	}
}

// The report says how many of the bench's produce requests were refused or
// lost (and resent) in a phase, from its producers' counts at its ends.
func TestMessagesCountTheBenchsFailedRequests(t *testing.T) {
	m := &Messages{ProduceRequests: 900, ProduceRequestsPerSec: 180, RecordsPerProduce: 64}
	m.addRequests(producerRequests{sent: 100, failed: 7}, producerRequests{sent: 1100, failed: 32})
	if m.BenchRequests != 1000 || m.BenchRequestsFailed != 25 {
		t.Fatalf("counted %d sent, %d failed; want 1000 and 25", m.BenchRequests, m.BenchRequestsFailed)
	}
	var b strings.Builder
	messagesLine(&b, "full load", m)
	if want := "produce requests refused or lost (full load)\t25 of 1000 the bench sent (2.50%), each resent; 0 batches waited"; !strings.Contains(b.String(), want) {
		t.Fatalf("report:\n%s\nwant a line with %q", b.String(), want)
	}
	var nilM *Messages
	nilM.addRequests(producerRequests{}, producerRequests{sent: 1}) // no panic: a phase without node counters
}
