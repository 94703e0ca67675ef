package node

import (
	"fmt"
	"strings"
	"testing"

	"paymentlog/metrics"
	"paymentlog/quic"
)

// scrape is what r writes to /metrics.
func (r *tlsRefusals) scrape(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	w := metrics.NewWriter(&b)
	r.write(w)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestTLSRefusalsMetric checks that every side and reason quic refuses for
// is listed (0 until counted), wrong-node on both sides, then any other
// reason counted, and that scrapes do not change the list.
func TestTLSRefusalsMetric(t *testing.T) {
	var r tlsRefusals
	r.add(quic.SideOutbound, quic.RefusedNameMismatch)
	r.add(quic.SideOutbound, quic.RefusedNameMismatch)
	r.add(quic.SideInbound, "z-new")
	r.add(quic.SideInbound, "a-new")
	first := r.scrape(t)
	sample := func(side, reason string, n int) string {
		return fmt.Sprintf("paymentlog_tls_handshakes_refused_total{side=%q,reason=%q} %d\n", side, reason, n)
	}
	var want []string
	for _, side := range []struct {
		name    string
		reasons []string
	}{{quic.SideInbound, quic.InboundRefusals}, {quic.SideOutbound, quic.OutboundRefusals}} {
		for _, reason := range append(side.reasons[:len(side.reasons):len(side.reasons)], quic.RefusedWrongNode) {
			n := 0
			if side.name == quic.SideOutbound && reason == quic.RefusedNameMismatch {
				n = 2
			}
			want = append(want, sample(side.name, reason, n))
		}
	}
	want = append(want, sample(quic.SideInbound, "a-new", 1), sample(quic.SideInbound, "z-new", 1))
	if _, samples, _ := strings.Cut(first, "counter\n"); samples != strings.Join(want, "") {
		t.Fatalf("metric:\n%s\nwant the samples:\n%s", first, strings.Join(want, ""))
	}
	for range 3 {
		if again := r.scrape(t); again != first {
			t.Fatalf("scraped again:\n%s\nfirst:\n%s", again, first)
		}
	}
}
