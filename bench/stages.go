package bench

import (
	"fmt"
	"io"
	"strings"
	"time"

	"paymentlog/client"
	"paymentlog/metrics"
)

// LatencyStages splits the paced run's produce latency by where the time
// went. Each stage is a histogram over the run, from the bench's producers
// (client.ProducerStats) or the local nodes' /metrics:
//
//   - BatchQueue: each batch's wait in the producer before its first send
//     (Linger, then any wait for a free in-flight slot);
//   - Request: each produce request's round trip, send to answer;
//   - Leader: each acks=all produce request's time on its leader, from its
//     arrival to its answer (paymentlog_produce_latency_seconds): the
//     leader's flush and, in parallel, the followers' fetch, flush and next
//     fetch;
//   - Flush: each group-commit flush of a partition log, on leaders and
//     followers alike (paymentlog_log_flush_latency_seconds).
//
// A record's produce latency is about its batch's queue time (less for the
// batch's later records) plus its request's round trip; Request minus
// Leader is the request's transfer both ways and the time either process
// took to get to it. Quantiles are interpolated inside the histograms'
// buckets (metrics.LatencyBuckets), so between 1 and 50 ms they are within
// about 25% of the truth (a third from 1 to 1.5 ms); the produce latency
// percentiles beside them are exact.
type LatencyStages struct {
	BatchQueue *StageLatency `json:"batch_queue_ms,omitempty"`
	Request    *StageLatency `json:"request_ms,omitempty"`
	Leader     *StageLatency `json:"leader_ms,omitempty"`
	Flush      *StageLatency `json:"flush_ms,omitempty"`
}

// StageLatency is one stage's latency in ms: Count observations (batches,
// requests or flushes), their mean and interpolated quantiles.
type StageLatency struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
}

// stageOf summarizes a histogram of one phase; nil when it is empty.
func stageOf(h metrics.HistogramSnapshot) *StageLatency {
	if h.Count == 0 {
		return nil
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return &StageLatency{Count: h.Count, Mean: ms(h.Sum) / float64(h.Count),
		P50: ms(h.Quantile(0.5)), P90: ms(h.Quantile(0.9)), P99: ms(h.Quantile(0.99))}
}

// producerStages is the producers' queue time and request round trip
// histograms, summed.
type producerStages struct{ queue, request metrics.HistogramSnapshot }

func readProducerStages(ps []*client.Producer) producerStages {
	var s producerStages
	for _, p := range ps {
		st := p.Stats()
		s.queue, _ = s.queue.Add(st.QueueTime) // one binary: the same bounds
		s.request, _ = s.request.Add(st.RequestLatency)
	}
	return s
}

// latencyStages is a phase's stages from the producers' and the nodes'
// readings at its start and end (nodes nil: their stages are left out).
func latencyStages(p0, p1 producerStages, n0, n1 *nodeCounters) *LatencyStages {
	since := func(a, b metrics.HistogramSnapshot) *StageLatency {
		d, ok := b.Sub(a)
		if !ok {
			return nil
		}
		return stageOf(d)
	}
	s := &LatencyStages{BatchQueue: since(p0.queue, p1.queue), Request: since(p0.request, p1.request)}
	if n0 != nil && n1 != nil {
		s.Leader, s.Flush = since(n0.leader, n1.leader), since(n0.flush, n1.flush)
	}
	if *s == (LatencyStages{}) {
		return nil
	}
	return s
}

// stagesLine writes a phase's stages, if measured.
func stagesLine(w io.Writer, phase string, s *LatencyStages) {
	if s == nil {
		return
	}
	var parts []string
	add := func(name string, l *StageLatency) {
		if l != nil {
			parts = append(parts, fmt.Sprintf("%s p50 %.1f p99 %.1f", name, l.P50, l.P99))
		}
	}
	add("batch queue", s.BatchQueue)
	add("request round trip", s.Request)
	add("on the leader", s.Leader)
	add("log flush", s.Flush)
	fmt.Fprintf(w, "  produce latency by stage (%s)\t%s ms (from histograms: quantiles within about 25%%)\n", phase, strings.Join(parts, ", "))
}

// combineStages is the median over rounds of each stage's figures (counts
// summed); nil unless every round has the stage.
func combineStages(ss []*LatencyStages) *LatencyStages {
	if len(ss) == 0 {
		return nil
	}
	for _, s := range ss {
		if s == nil {
			return nil
		}
	}
	stage := func(get func(*LatencyStages) *StageLatency) *StageLatency {
		var ls []*StageLatency
		for _, s := range ss {
			if l := get(s); l != nil {
				ls = append(ls, l)
			}
		}
		if len(ls) != len(ss) {
			return nil
		}
		out := &StageLatency{
			Mean: medianOf(mapRounds(ls, func(l *StageLatency) float64 { return l.Mean })),
			P50:  medianOf(mapRounds(ls, func(l *StageLatency) float64 { return l.P50 })),
			P90:  medianOf(mapRounds(ls, func(l *StageLatency) float64 { return l.P90 })),
			P99:  medianOf(mapRounds(ls, func(l *StageLatency) float64 { return l.P99 })),
		}
		for _, l := range ls {
			out.Count += l.Count
		}
		return out
	}
	return &LatencyStages{
		BatchQueue: stage(func(s *LatencyStages) *StageLatency { return s.BatchQueue }),
		Request:    stage(func(s *LatencyStages) *StageLatency { return s.Request }),
		Leader:     stage(func(s *LatencyStages) *StageLatency { return s.Leader }),
		Flush:      stage(func(s *LatencyStages) *StageLatency { return s.Flush }),
	}
}
