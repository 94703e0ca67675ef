package metrics

import (
	"slices"
	"sync/atomic"
	"time"
)

// LatencyBuckets are the upper bounds of the default latency histogram:
// 0.25 ms to 10 s, finest between 1 and 50 ms, where an acks=all produce
// and a log flush land and where a p99 objective of a few milliseconds is
// judged: a quantile interpolated inside a bucket is off by at most the
// bucket's width, a quarter of its bound or less from 1.5 to 50 ms (a
// third from 1 to 1.5 ms). They cover an fsync on a fast NVMe disk (tens
// of µs land in the first bucket) up to a produce that waits out a
// follower's lag time; with +Inf and the sum a histogram uses 30 atomic
// words.
var LatencyBuckets = []time.Duration{
	250 * time.Microsecond, 500 * time.Microsecond, 750 * time.Microsecond,
	1 * time.Millisecond, 1500 * time.Microsecond, 2 * time.Millisecond, 2500 * time.Microsecond,
	3 * time.Millisecond, 4 * time.Millisecond, 5 * time.Millisecond, 6 * time.Millisecond,
	8 * time.Millisecond, 10 * time.Millisecond, 12500 * time.Microsecond, 15 * time.Millisecond,
	20 * time.Millisecond, 25 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond,
	50 * time.Millisecond, 75 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond,
	500 * time.Millisecond, 1 * time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// MaxBuckets bounds the finite buckets of a Histogram.
const MaxBuckets = 31

// defaultBounds is LatencyBuckets in ns.
var defaultBounds = func() []int64 {
	b := make([]int64, len(LatencyBuckets))
	for i, d := range LatencyBuckets {
		b[i] = int64(d)
	}
	return b
}()

// Histogram counts durations in fixed buckets. Observe is lock-free: a
// bucket search over a few bounds and two atomic adds. The zero value is
// ready to use with LatencyBuckets; NewHistogram sets other bounds.
type Histogram struct {
	bounds []int64 // upper bounds in ns, ascending; immutable; nil: defaultBounds
	// counts[i]: observations <= bounds[i] and > bounds[i-1];
	// counts[len(bounds)] is +Inf.
	counts [MaxBuckets + 1]atomic.Uint64
	sum    atomic.Int64 // ns
}

func (h *Histogram) bnds() []int64 {
	if h.bounds == nil {
		return defaultBounds
	}
	return h.bounds
}

// NewHistogram returns a histogram with the given upper bounds (ascending;
// nil: LatencyBuckets). It panics on bounds that are not strictly ascending
// and positive, or more than MaxBuckets: they are the caller's constants.
func NewHistogram(bounds []time.Duration) *Histogram {
	if bounds == nil {
		return &Histogram{}
	}
	if len(bounds) > MaxBuckets {
		panic("metrics: too many histogram buckets")
	}
	h := &Histogram{bounds: make([]int64, len(bounds))}
	for i, b := range bounds {
		if b <= 0 || (i > 0 && b <= bounds[i-1]) {
			panic("metrics: histogram bounds must be positive and strictly ascending")
		}
		h.bounds[i] = int64(b)
	}
	return h
}

// Observe records one duration (negative ones count as 0).
func (h *Histogram) Observe(d time.Duration) {
	ns := max(int64(d), 0)
	i, _ := slices.BinarySearch(h.bnds(), ns) // the first bound >= ns; len: +Inf
	h.counts[i].Add(1)
	h.sum.Add(ns)
}

// Since records the time elapsed since start.
func (h *Histogram) Since(start time.Time) { h.Observe(time.Since(start)) }

// HistogramSnapshot is a histogram's state at one moment, with cumulative
// counts as the exposition format wants them.
type HistogramSnapshot struct {
	Bounds     []time.Duration // upper bounds, without +Inf
	Cumulative []uint64        // Cumulative[i]: observations <= Bounds[i]; the last entry (len(Bounds)) is +Inf, equal to Count
	Count      uint64
	Sum        time.Duration
}

// Snapshot reads the histogram. Observations that run concurrently may be in
// Sum and not yet in a bucket or the reverse; the buckets and Count always
// agree (Count is the +Inf bucket).
func (h *Histogram) Snapshot() HistogramSnapshot {
	bounds := h.bnds()
	s := HistogramSnapshot{Bounds: make([]time.Duration, len(bounds)), Cumulative: make([]uint64, len(bounds)+1)}
	for i, b := range bounds {
		s.Bounds[i] = time.Duration(b)
	}
	var c uint64
	for i := range s.Cumulative {
		c += h.counts[i].Load()
		s.Cumulative[i] = c
	}
	s.Count = c
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// Quantile estimates the q-quantile (0 < q <= 1) as Prometheus's
// histogram_quantile does: linear interpolation inside the bucket that holds
// it; the highest finite bound when it falls in +Inf; 0 when empty.
func (s HistogramSnapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 {
		return 0
	}
	rank := q * float64(s.Count)
	for i, c := range s.Cumulative {
		if float64(c) < rank {
			continue
		}
		if i == len(s.Bounds) {
			return s.Bounds[len(s.Bounds)-1]
		}
		var lo time.Duration
		var below uint64
		if i > 0 {
			lo, below = s.Bounds[i-1], s.Cumulative[i-1]
		}
		in := c - below
		if in == 0 {
			return s.Bounds[i]
		}
		return lo + time.Duration(float64(s.Bounds[i]-lo)*(rank-float64(below))/float64(in))
	}
	return s.Bounds[len(s.Bounds)-1]
}

// Sub returns the observations made between before and s, two snapshots
// of histograms with the same bounds (summed or not). ok is false when
// the bounds differ or a count went down (a process restarted between
// them): no difference can be told.
func (s HistogramSnapshot) Sub(before HistogramSnapshot) (d HistogramSnapshot, ok bool) {
	if !slices.Equal(s.Bounds, before.Bounds) || len(s.Cumulative) != len(before.Cumulative) || s.Count < before.Count {
		return HistogramSnapshot{}, false
	}
	d = HistogramSnapshot{Bounds: s.Bounds, Cumulative: make([]uint64, len(s.Cumulative)), Count: s.Count - before.Count, Sum: s.Sum - before.Sum}
	for i, c := range s.Cumulative {
		if c < before.Cumulative[i] {
			return HistogramSnapshot{}, false
		}
		d.Cumulative[i] = c - before.Cumulative[i]
	}
	return d, true
}

// Add returns the sum of two snapshots with the same bounds, such as the
// same histogram of several processes; ok is false when the bounds differ.
// The zero HistogramSnapshot adds as nothing.
func (s HistogramSnapshot) Add(o HistogramSnapshot) (sum HistogramSnapshot, ok bool) {
	switch {
	case s.Bounds == nil && s.Count == 0:
		return o, true
	case o.Bounds == nil && o.Count == 0:
		return s, true
	case !slices.Equal(s.Bounds, o.Bounds) || len(s.Cumulative) != len(o.Cumulative):
		return HistogramSnapshot{}, false
	}
	sum = HistogramSnapshot{Bounds: s.Bounds, Cumulative: make([]uint64, len(s.Cumulative)), Count: s.Count + o.Count, Sum: s.Sum + o.Sum}
	for i, c := range s.Cumulative {
		sum.Cumulative[i] = c + o.Cumulative[i]
	}
	return sum, true
}
