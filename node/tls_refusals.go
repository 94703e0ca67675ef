package node

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"paymentlog/metrics"
	"paymentlog/quic"
)

// tlsRefusals counts the handshakes the node refused because of its peer's
// certificate, by side (inbound: a client's; outbound: a server's it
// dialed) and reason: paymentlog_tls_handshakes_refused_total. Every
// refusal is counted, whether or not its audit line is written (one a
// minute per peer host, reason and certificate) and with or without
// --audit-log. The zero value is ready.
type tlsRefusals struct {
	mu sync.Mutex
	n  map[tlsRefusal]uint64
}

type tlsRefusal struct{ side, reason string }

// tlsRefusalKeys are every side and reason quic may refuse for, in the
// order /metrics lists them: built once, not at every scrape.
var tlsRefusalKeys = func() []tlsRefusal {
	var keys []tlsRefusal
	for _, side := range []struct {
		name    string
		reasons []string
	}{{quic.SideInbound, quic.InboundRefusals}, {quic.SideOutbound, quic.OutboundRefusals}} {
		for _, reason := range side.reasons {
			keys = append(keys, tlsRefusal{side.name, reason})
		}
		keys = append(keys, tlsRefusal{side.name, quic.RefusedWrongNode})
	}
	return keys
}()

func (r *tlsRefusals) add(side, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == nil {
		r.n = map[tlsRefusal]uint64{}
	}
	r.n[tlsRefusal{side, reason}]++
}

// write writes the family: every side and reason quic may refuse for (0
// until one is refused, so that rates start from 0), then any other.
func (r *tlsRefusals) write(w *metrics.Writer) {
	r.mu.Lock()
	counts := make(map[tlsRefusal]uint64, len(r.n))
	for k, v := range r.n {
		counts[k] = v
	}
	r.mu.Unlock()
	w.Family("paymentlog_tls_handshakes_refused_total", metrics.TypeCounter,
		"TLS handshakes this node refused because of the peer's certificate, by side (inbound: a client's, or another node's connecting; outbound: a peer's this node dialed) and reason "+
			"(no-certificate, unknown-ca, expired, not-yet-valid, bad-usage, name-mismatch (outbound), bad-certificate, revoked), and calls refused for a valid certificate of another node than the one claimed or dialed (wrong-node); all counted, though the audit trail writes one a minute per peer host, reason and certificate.")
	var others []tlsRefusal
	for k := range counts {
		if !slices.Contains(tlsRefusalKeys, k) {
			others = append(others, k)
		}
	}
	slices.SortFunc(others, func(a, b tlsRefusal) int {
		return cmp.Or(strings.Compare(a.side, b.side), strings.Compare(a.reason, b.reason))
	})
	for _, keys := range [][]tlsRefusal{tlsRefusalKeys, others} {
		for _, k := range keys {
			w.Uint(metrics.Labels{"side", k.side, "reason", k.reason}, counts[k])
		}
	}
}
