package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/metrics"
)

// stagesNode serves /metrics as a node writes it: the QUIC counters, the
// produce latency histogram by acks and the flush latency histogram.
type stagesNode struct {
	mu                      sync.Mutex
	all, one, flush         *metrics.Histogram
	omitFlush, otherBuckets bool
}

func newStagesNode() *stagesNode {
	return &stagesNode{all: metrics.NewHistogram(nil), one: metrics.NewHistogram(nil), flush: metrics.NewHistogram(nil)}
}

func (n *stagesNode) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	n.mu.Lock()
	defer n.mu.Unlock()
	mw := metrics.NewWriter(w)
	mw.Counter("paymentlog_quic_packets_sent_total", "sent", 10)
	mw.Counter("paymentlog_quic_packets_lost_total", "lost", 0)
	mw.Family("paymentlog_produce_latency_seconds", metrics.TypeHistogram, "produce")
	mw.Histogram(metrics.Labels{"acks", "1"}, n.one.Snapshot())
	all := n.all.Snapshot()
	if n.otherBuckets {
		h := metrics.NewHistogram([]time.Duration{time.Millisecond})
		h.Observe(time.Millisecond)
		all = h.Snapshot()
	}
	mw.Histogram(metrics.Labels{"acks", "all"}, all)
	if !n.omitFlush {
		mw.Family("paymentlog_log_flush_latency_seconds", metrics.TypeHistogram, "flush")
		mw.Histogram(nil, n.flush.Snapshot())
	}
	mw.Gauge("paymentlog_partitions_after", "a family after the histograms", 1)
	if err := mw.Flush(); err != nil {
		panic(err)
	}
}

// The nodes' acks=all produce and flush histograms are read from their
// /metrics text exactly as the nodes hold them, summed over the nodes, and
// a phase's stages are the difference of two readings; acks=1 requests do
// not count, and nodes whose histograms cannot be summed give no stage
// rather than a wrong one.
func TestLatencyStagesFromNodeMetrics(t *testing.T) {
	a, b := newStagesNode(), newStagesNode()
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	defer sa.Close()
	defer sb.Close()
	nodes := map[int32]string{1: strings.TrimPrefix(sa.URL, "http://"), 2: strings.TrimPrefix(sb.URL, "http://")}
	ctx := context.Background()
	a.all.Observe(time.Hour) // before the phase: not in it
	before, err := scrapeNodes(ctx, nodes)
	if err != nil || before.leader.Count != 1 || before.flush.Count != 0 || !slices.Equal(before.leader.Bounds, metrics.LatencyBuckets) {
		t.Fatalf("first reading %+v (%v)", before, err)
	}
	for i := range 100 {
		a.all.Observe(time.Duration(i+1) * 100 * time.Microsecond) // 0.1 .. 10 ms
		b.all.Observe(2 * time.Millisecond)
		a.one.Observe(time.Second) // acks=1: not a stage
		b.flush.Observe(time.Millisecond)
	}
	after, err := scrapeNodes(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	want := a.all.Snapshot()
	want, _ = want.Add(b.all.Snapshot())
	if !slices.Equal(after.leader.Cumulative, want.Cumulative) || after.leader.Sum != want.Sum {
		t.Fatalf("summed acks=all histogram %+v, want %+v", after.leader, want)
	}
	s := latencyStages(producerStages{}, producerStages{}, before, after)
	if s == nil || s.Leader == nil || s.Flush == nil || s.BatchQueue != nil || s.Request != nil {
		t.Fatalf("stages %+v", s)
	}
	// Node a: 0.1 to 10 ms, mean 5.05; node b: 2 ms. The median is among
	// b's, in the bucket (1.5 ms, 2 ms].
	if l := s.Leader; l.Count != 200 || l.Mean < 3.52 || l.Mean > 3.53 || l.P50 <= 1.5 || l.P50 > 2 || l.P99 <= 8 || l.P99 > 10 {
		t.Fatalf("leader stage %+v, want 200 requests, mean 3.525 ms, p50 in (1.5, 2], p99 in (8, 10] ms", l)
	}
	if f := s.Flush; f.Count != 100 || f.P50 <= 0.75 || f.P50 > 1 || f.Mean != 1 {
		t.Fatalf("flush stage %+v, want 100 flushes of 1 ms", f)
	}
	var line strings.Builder
	stagesLine(&line, "half load", s)
	if got := line.String(); !strings.Contains(got, "on the leader p50 1.9 p99 9.8") || !strings.Contains(got, "log flush p50 0.9 p99 1.0") || strings.Contains(got, "batch queue") {
		t.Fatalf("report line %q", got)
	}

	// One node without the flush histogram, then one with other buckets:
	// no sum, so no stage.
	b.omitFlush = true
	if c, err := scrapeNodes(ctx, nodes); err != nil || c.flush.Count != 0 || c.leader.Count == 0 {
		t.Fatalf("without one node's flush histogram: %+v (%v)", c, err)
	}
	b.omitFlush, b.otherBuckets = false, true
	c, err := scrapeNodes(ctx, nodes)
	if err != nil || c.leader.Count != 0 || c.flush.Count == 0 {
		t.Fatalf("with buckets that do not add up: %+v (%v)", c, err)
	}
	if s := latencyStages(producerStages{}, producerStages{}, before, c); s == nil || s.Leader != nil || s.Flush == nil {
		t.Fatalf("stages across unsummable readings %+v", s)
	}
}

// A node's histogram text that does not parse is an error naming the
// sample, not a silently wrong stage.
func TestLatencyStagesRefuseBadBuckets(t *testing.T) {
	for _, body := range []string{
		`paymentlog_log_flush_latency_seconds_bucket{le="x"} 1`,
		`paymentlog_log_flush_latency_seconds_bucket{le="0.002"} 1` + "\n" + `paymentlog_log_flush_latency_seconds_bucket{le="0.001"} 1`,
		`paymentlog_log_flush_latency_seconds_bucket{le="0.001"} 2` + "\n" + `paymentlog_log_flush_latency_seconds_bucket{le="0.002"} 1`,
		`paymentlog_produce_latency_seconds_bucket{acks="all"} 1`,
		`paymentlog_produce_latency_seconds_sum{acks="all"} -1`,
		`paymentlog_produce_latency_seconds_sum{acks="all"} 1e300`,
		`paymentlog_log_flush_latency_seconds_bucket{le="1e-300"} 1`,
		`paymentlog_log_flush_latency_seconds_bucket{le="NaN"} 1`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "paymentlog_quic_packets_sent_total 1\npaymentlog_quic_packets_lost_total 0\n%s\n", body)
		}))
		_, err := scrapeNodes(context.Background(), map[int32]string{1: strings.TrimPrefix(srv.URL, "http://")})
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "paymentlog_") {
			t.Errorf("%q: err %v, want one naming the sample", body, err)
		}
	}
}

// Rounds combine into the median of each stage figure, counts summed; a
// stage missing from any round is left out.
func TestCombineStages(t *testing.T) {
	st := func(p99 float64, n uint64) *StageLatency { return &StageLatency{Count: n, P50: p99 / 4, P99: p99} }
	rounds := []*LatencyStages{
		{BatchQueue: st(8, 10), Leader: st(30, 5)},
		{BatchQueue: st(6, 10), Leader: st(10, 5), Flush: st(2, 1)},
		{BatchQueue: st(20, 10), Leader: st(20, 5)},
	}
	c := combineStages(rounds)
	if c.BatchQueue == nil || c.BatchQueue.P99 != 8 || c.BatchQueue.Count != 30 || c.Leader.P99 != 20 || c.Leader.P50 != 5 || c.Flush != nil {
		t.Fatalf("combined %+v", c)
	}
	if combineStages([]*LatencyStages{rounds[0], nil}) != nil || combineStages(nil) != nil {
		t.Fatal("rounds without stages combined into some")
	}
}

// FuzzParseNodeMetrics: whatever a node's /metrics holds, parsing it
// neither panics nor yields a histogram that is not one (bounds ascending
// and positive, counts cumulative up to Count), so that the stages'
// quantiles stay within its bounds.
func FuzzParseNodeMetrics(f *testing.F) {
	n := newStagesNode()
	for i := range 50 {
		n.all.Observe(time.Duration(i) * 300 * time.Microsecond)
		n.flush.Observe(time.Duration(i) * 50 * time.Microsecond)
	}
	rec := httptest.NewRecorder()
	n.ServeHTTP(rec, nil)
	f.Add(rec.Body.String())
	f.Add("paymentlog_quic_packets_sent_total 1\npaymentlog_quic_packets_lost_total 0\n" +
		`paymentlog_log_flush_latency_seconds_bucket{le="0.001"} 3` + "\n" +
		`paymentlog_log_flush_latency_seconds_bucket{le="+Inf"} 2` + "\n")
	f.Add("paymentlog_quic_packets_sent_total 1\npaymentlog_quic_packets_lost_total 0\n" +
		`paymentlog_produce_latency_seconds_bucket{acks="all",le="1e-300"} 1` + "\n" +
		`paymentlog_produce_latency_seconds_bucket{acks="all",le="1e300"} 1` + "\n" +
		`paymentlog_produce_latency_seconds_sum{acks="all"} 1e300` + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		c, err := parseNodeMetrics(strings.NewReader(text))
		if err != nil {
			return
		}
		for _, h := range []metrics.HistogramSnapshot{c.leader, c.flush} {
			if h.Count == 0 {
				continue
			}
			if len(h.Cumulative) != len(h.Bounds)+1 || h.Cumulative[len(h.Bounds)] != h.Count {
				t.Fatalf("histogram %+v: counts do not end at Count", h)
			}
			for i, b := range h.Bounds {
				if b <= 0 || i > 0 && b <= h.Bounds[i-1] || h.Cumulative[i] > h.Cumulative[i+1] {
					t.Fatalf("histogram %+v: bound or count %d out of order", h, i)
				}
			}
			if q := h.Quantile(0.99); q < 0 || q > h.Bounds[len(h.Bounds)-1] {
				t.Fatalf("p99 %v outside the bounds of %+v", q, h)
			}
			if s := stageOf(h); s == nil || s.P99 < 0 {
				t.Fatalf("stage of %+v: %+v", h, s)
			}
		}
	})
}
