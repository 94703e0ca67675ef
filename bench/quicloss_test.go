package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestQUICLossFromNodeMetrics: the nodes' counters are summed from their
// /metrics text and a phase's loss is the difference of two readings; a
// node without the counters gives no figure rather than a wrong one.
func TestQUICLossFromNodeMetrics(t *testing.T) {
	sent, lost := uint64(1000), uint64(3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "paymentlog_node_id 1\npaymentlog_quic_packets_sent_total %d\npaymentlog_quic_packets_lost_total %d\ngo_goroutines 7\n", sent, lost)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()
	nodes := map[int32]string{1: addr, 2: addr}
	before, err := quicCounters(ctx, nodes)
	if err != nil || before == nil || before.PacketsSent != 2000 || before.PacketsLost != 6 {
		t.Fatalf("first reading %+v (%v), want 2000 sent, 6 lost", before, err)
	}
	sent, lost = 3000, 13
	after, err := quicCounters(ctx, nodes)
	d := after.since(before)
	if err != nil || d == nil || d.PacketsSent != 4000 || d.PacketsLost != 20 || d.LostPercent != 0.5 {
		t.Fatalf("phase %+v, want 4000 sent, 20 lost, 0.5%%", d)
	}
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "paymentlog_node_id 2")
	}))
	defer bare.Close()
	if q, err := quicCounters(ctx, map[int32]string{1: addr, 2: strings.TrimPrefix(bare.URL, "http://")}); q != nil || err == nil {
		t.Fatalf("a node without QUIC counters gave %+v (%v)", q, err)
	}
	if q, err := quicCounters(ctx, nil); q != nil || err != nil || q.since(before) != nil {
		t.Fatalf("no metrics addresses gave %+v (%v)", q, err)
	}
}
