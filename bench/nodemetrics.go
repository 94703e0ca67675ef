package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"paymentlog/metrics"
)

// The local nodes' /metrics, as the bench reads them: QUIC packet and
// message counters (QUICLoss, Messages) and the latency histograms of the
// stages (LatencyStages). Only the families named here are read; the text
// is the Prometheus exposition format the nodes write (metrics.Writer).

// nodeCounters is one reading of the local nodes' counters, summed over
// the nodes: QUIC packets and the messages that carry replication.
type nodeCounters struct {
	loss QUICLoss
	msgs Messages
	// produceBytes is the batch bytes the nodes appended as leaders
	// (paymentlog_produce_bytes_total); hasProduceBytes says every node
	// had the counter.
	produceBytes    uint64
	hasProduceBytes bool
	// leader and flush are the acks=all produce and log flush latency
	// histograms (LatencyStages); zero when a node lacks them.
	leader, flush metrics.HistogramSnapshot
	// fences is paymentlog_controller_broker_fences_total by cause, and
	// portFoundBy paymentlog_controller_port_closed_fences_total by what
	// found the port closed.
	fences, portFoundBy map[string]uint64
}

// scrapeNodes sums the nodes' counters; nil without metrics addresses, and
// nil with the error when a node's cannot be read.
func scrapeNodes(ctx context.Context, addrs map[int32]string) (*nodeCounters, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	sum := nodeCounters{hasProduceBytes: true}
	sums := make([]nodeCounters, 0, len(addrs))
	for _, a := range addrs {
		c, err := scrapeCounters(ctx, a)
		if err != nil {
			return nil, err
		}
		sum.loss.PacketsSent += c.loss.PacketsSent
		sum.loss.PacketsLost += c.loss.PacketsLost
		sum.msgs.ProduceRequests += c.msgs.ProduceRequests
		sum.msgs.ReplicaFetchAnswers += c.msgs.ReplicaFetchAnswers
		sum.msgs.ReorderWaits += c.msgs.ReorderWaits
		sum.msgs.ReorderRefused += c.msgs.ReorderRefused
		sum.produceBytes += c.produceBytes
		sum.hasProduceBytes = sum.hasProduceBytes && c.hasProduceBytes
		sum.fences = addCounts(sum.fences, c.fences)
		sum.portFoundBy = addCounts(sum.portFoundBy, c.portFoundBy)
		sums = append(sums, c)
	}
	sum.leader, sum.flush = sumHistograms(sums, func(c nodeCounters) metrics.HistogramSnapshot { return c.leader }),
		sumHistograms(sums, func(c nodeCounters) metrics.HistogramSnapshot { return c.flush })
	return &sum, nil
}

// sumHistograms adds one histogram of every node; zero unless every node
// has it, with the same bounds.
func sumHistograms(cs []nodeCounters, get func(nodeCounters) metrics.HistogramSnapshot) metrics.HistogramSnapshot {
	var sum metrics.HistogramSnapshot
	for _, c := range cs {
		h := get(c)
		var ok bool
		if sum, ok = sum.Add(h); !ok || h.Bounds == nil {
			return metrics.HistogramSnapshot{}
		}
	}
	return sum
}

// scrapeCounters reads one node's /metrics (parseNodeMetrics).
func scrapeCounters(ctx context.Context, addr string) (nodeCounters, error) {
	var c nodeCounters
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return c, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	c, err = parseNodeMetrics(resp.Body)
	if err != nil {
		return c, fmt.Errorf("bench: %s/metrics: %w", addr, err)
	}
	return c, nil
}

// parseNodeMetrics reads a node's /metrics text: the QUIC packet counters
// (required), the message and produced-bytes counters and the stage
// histograms (taken when present).
func parseNodeMetrics(r io.Reader) (nodeCounters, error) {
	var c nodeCounters
	found := 0
	var leader, flush promHistogram
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		family, labels, _ := strings.Cut(name, "{")
		labels = strings.TrimSuffix(labels, "}")
		var h *promHistogram
		suffix, ok := histogramSuffix(family, "paymentlog_produce_latency_seconds")
		if ok {
			if acks, _ := labelValue(labels, "acks"); acks == "all" {
				h = &leader // acks=0 and acks=1 are no stage
			}
		} else if suffix, ok = histogramSuffix(family, "paymentlog_log_flush_latency_seconds"); ok {
			h = &flush
		}
		if h != nil {
			if err := h.sample(suffix, labels, val); err != nil {
				return c, fmt.Errorf("%s: %w", name, err)
			}
			continue
		}
		if dst, label := labelledCount(&c, family); dst != nil {
			key, _ := labelValue(labels, label)
			n, err := strconv.ParseUint(val, 10, 64)
			if err != nil {
				return c, fmt.Errorf("%s: %w", name, err)
			}
			*dst = addCounts(*dst, map[string]uint64{key: n})
			continue
		}
		var dst *uint64
		switch name {
		case "paymentlog_quic_packets_sent_total":
			dst, found = &c.loss.PacketsSent, found+1
		case "paymentlog_quic_packets_lost_total":
			dst, found = &c.loss.PacketsLost, found+1
		case "paymentlog_produce_requests_total":
			dst = &c.msgs.ProduceRequests
		case "paymentlog_replica_fetch_responses_total":
			dst = &c.msgs.ReplicaFetchAnswers
		case "paymentlog_produce_reorder_waits_total":
			dst = &c.msgs.ReorderWaits
		case "paymentlog_produce_reorder_refused_total":
			dst = &c.msgs.ReorderRefused
		case "paymentlog_produce_bytes_total":
			dst, c.hasProduceBytes = &c.produceBytes, true
		default:
			continue
		}
		var err error
		if *dst, err = strconv.ParseUint(val, 10, 64); err != nil {
			return c, fmt.Errorf("%s: %w", name, err)
		}
	}
	if err := sc.Err(); err != nil {
		return c, err
	}
	if found != 2 {
		return c, errors.New("no QUIC packet counters")
	}
	c.leader, _ = leader.snapshot()
	c.flush, _ = flush.snapshot()
	return c, nil
}

// promHistogram gathers one histogram's buckets from /metrics lines, in
// the order the node writes them (ascending le, +Inf last).
type promHistogram struct {
	bounds []time.Duration
	cum    []uint64
	inf    uint64
	seen   bool // the +Inf bucket
	sum    time.Duration
}

// sample adds one line of the histogram: a bucket (le set) or its sum.
func (h *promHistogram) sample(suffix, labels, val string) error {
	switch suffix {
	case "_bucket":
		le, ok := labelValue(labels, "le")
		if !ok {
			return fmt.Errorf("bucket without le")
		}
		v, err := strconv.ParseUint(val, 10, 64)
		if err != nil {
			return err
		}
		return h.bucket(le, v)
	case "_sum":
		d, ok := seconds(val)
		if !ok {
			return fmt.Errorf("sum %q", val)
		}
		h.sum = d
	}
	return nil
}

// seconds parses a non-negative number of seconds that fits a Duration.
func seconds(s string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !(f >= 0 && f*1e9 < math.MaxInt64) { // NaN fails too
		return 0, false
	}
	return time.Duration(math.Round(f * 1e9)), true
}

// bucket adds the sample of one bucket line: le is its label's value.
func (h *promHistogram) bucket(le string, v uint64) error {
	if le == "+Inf" {
		h.inf, h.seen = v, true
		return nil
	}
	b, ok := seconds(le)
	if !ok || b <= 0 {
		return fmt.Errorf("bucket bound le=%q", le)
	}
	if n := len(h.bounds); n > 0 && (b <= h.bounds[n-1] || v < h.cum[n-1]) {
		return fmt.Errorf("bucket le=%q out of order", le)
	}
	h.bounds, h.cum = append(h.bounds, b), append(h.cum, v)
	return nil
}

// snapshot is the histogram read; ok is false when it was absent or lacks
// its +Inf bucket.
func (h *promHistogram) snapshot() (metrics.HistogramSnapshot, bool) {
	if !h.seen || len(h.bounds) == 0 || h.inf < h.cum[len(h.cum)-1] {
		return metrics.HistogramSnapshot{}, false
	}
	return metrics.HistogramSnapshot{Bounds: h.bounds, Cumulative: append(h.cum, h.inf), Count: h.inf, Sum: h.sum}, true
}

// histogramSuffix reports whether family is one of histogram base's
// series (_bucket, _sum or _count), and which.
func histogramSuffix(family, base string) (string, bool) {
	rest, ok := strings.CutPrefix(family, base)
	switch {
	case !ok:
		return "", false
	case rest == "_bucket", rest == "_sum", rest == "_count":
		return rest, true
	}
	return "", false
}

// labelValue returns the value of label k in a sample's {…} labels.
func labelValue(labels, k string) (string, bool) {
	for _, kv := range strings.Split(labels, ",") {
		if name, v, ok := strings.Cut(kv, "="); ok && name == k {
			return strings.Trim(v, `"`), true
		}
	}
	return "", false
}

// labelledCount returns where c keeps the counter family by its label
// (the map and the label's name); nil for any other family.
func labelledCount(c *nodeCounters, family string) (*map[string]uint64, string) {
	switch family {
	case "paymentlog_controller_broker_fences_total":
		return &c.fences, "cause"
	case "paymentlog_controller_port_closed_fences_total":
		return &c.portFoundBy, "found_by"
	}
	return nil, ""
}
