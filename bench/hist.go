package bench

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// latency is a concurrent HDR histogram of durations, recorded in
// microseconds from 1 µs to 10 min with 3 significant digits.
type latency struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func newLatency() *latency {
	return &latency{h: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

func (l *latency) record(d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	l.mu.Lock()
	l.h.RecordValue(us) // values above the top are refused; 10 min is far beyond any timeout
	l.mu.Unlock()
}

// merge adds o's values.
func (l *latency) merge(o *latency) {
	o.mu.Lock()
	defer o.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.h.Merge(o.h)
}

// Percentiles in milliseconds; JSON field names are part of the --json format.
type Percentiles struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

func (l *latency) percentiles() Percentiles {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Percentiles{
		Count: l.h.TotalCount(),
		Mean:  l.h.Mean() / 1000,
		P50:   ms(l.h.ValueAtQuantile(50)),
		P95:   ms(l.h.ValueAtQuantile(95)),
		P99:   ms(l.h.ValueAtQuantile(99)),
		P999:  ms(l.h.ValueAtQuantile(99.9)),
		Max:   ms(l.h.Max()),
	}
}

// Summary is p50/p99/max over a handful of trials, in milliseconds (exact,
// not histogram-rounded: trials are few). Percentiles are nearest-rank (the
// ceil(q·N)-th smallest value, never an interpolation): with fewer than 100
// trials p99 is the maximum.
type Summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	// Missing counts trials in which the step never happened within the
	// timeout. They are not in N or the percentiles, so a Summary with
	// Missing > 0 understates the true tail: it cannot meet a target.
	Missing int `json:"missing,omitempty"`
}

// summarizeTrials summarizes one figure over trials; a negative value marks
// a trial without that figure (counted in Missing).
func summarizeTrials(vals []float64) Summary {
	var xs []float64
	for _, v := range vals {
		if v >= 0 {
			xs = append(xs, v)
		}
	}
	s := summarize(xs)
	s.Missing = len(vals) - len(xs)
	return s
}

// summarize computes nearest-rank percentiles of xs (milliseconds).
func summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := append([]float64(nil), xs...)
	sortFloats(s)
	rank := func(q float64) float64 {
		i := int(q*float64(len(s))+0.999999999) - 1 // ceil(q*n)-1
		i = max(0, min(i, len(s)-1))
		return s[i]
	}
	return Summary{N: len(s), P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1]}
}
