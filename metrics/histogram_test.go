package metrics_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/metrics"
)

func TestHistogramBuckets(t *testing.T) {
	h := metrics.NewHistogram([]time.Duration{time.Millisecond, 10 * time.Millisecond, time.Second})
	for _, d := range []time.Duration{-time.Second, 0, time.Millisecond, time.Millisecond + 1, 10 * time.Millisecond, 999 * time.Millisecond, time.Second, time.Hour} {
		h.Observe(d)
	}
	s := h.Snapshot()
	// <= 1ms: -1s (as 0), 0, 1ms; <= 10ms: +1ns, 10ms; <= 1s: 999ms, 1s; +Inf: 1h.
	want := []uint64{3, 5, 7, 8}
	for i, c := range want {
		if s.Cumulative[i] != c {
			t.Fatalf("cumulative = %v, want %v", s.Cumulative, want)
		}
	}
	if s.Count != 8 {
		t.Fatalf("count = %d, want 8", s.Count)
	}
	wantSum := time.Millisecond + time.Millisecond + 1 + 10*time.Millisecond + 999*time.Millisecond + time.Second + time.Hour
	if s.Sum != wantSum {
		t.Fatalf("sum = %v, want %v", s.Sum, wantSum)
	}
}

func TestHistogramDefaultBuckets(t *testing.T) {
	var h metrics.Histogram // the zero value
	s := h.Snapshot()
	if len(s.Bounds) != len(metrics.LatencyBuckets) || s.Bounds[0] != 250*time.Microsecond || s.Bounds[len(s.Bounds)-1] != 10*time.Second {
		t.Fatalf("default bounds %v", s.Bounds)
	}
	if len(s.Cumulative) != len(s.Bounds)+1 || s.Count != 0 {
		t.Fatalf("empty snapshot %+v", s)
	}
	h.Observe(time.Millisecond)
	h.Observe(11 * time.Second)
	s = h.Snapshot()
	ms := slices.Index(s.Bounds, time.Millisecond)
	if ms < 1 || s.Cumulative[ms-1] != 0 || s.Cumulative[ms] != 1 || s.Cumulative[len(s.Bounds)-1] != 1 || s.Count != 2 {
		t.Fatalf("zero-value histogram after 1ms and 11s: %v", s.Cumulative)
	}
	if len(metrics.LatencyBuckets) > metrics.MaxBuckets {
		t.Fatalf("%d default buckets, more than MaxBuckets", len(metrics.LatencyBuckets))
	}
}

// Every observation lands in the bucket of the first bound at or above it,
// as a linear search over the bounds would put it.
func TestHistogramObserveMatchesALinearSearch(t *testing.T) {
	bounds := metrics.LatencyBuckets
	var probes []time.Duration
	for _, b := range bounds {
		probes = append(probes, b-1, b, b+1)
	}
	probes = append(probes, 0, -1, 20*time.Second)
	for _, d := range probes {
		h := metrics.NewHistogram(nil)
		h.Observe(d)
		s := h.Snapshot()
		want := len(bounds)
		for i, b := range bounds {
			if max(d, 0) <= b {
				want = i
				break
			}
		}
		got := slices.IndexFunc(s.Cumulative, func(c uint64) bool { return c == 1 })
		if got != want {
			t.Fatalf("Observe(%v) counted in bucket %d, want %d", d, got, want)
		}
	}
}

// Sub gives what was observed between two snapshots, Add sums two
// processes' histograms; both refuse snapshots they cannot combine.
func TestHistogramSubAndAdd(t *testing.T) {
	bounds := []time.Duration{time.Millisecond, 10 * time.Millisecond}
	a, b := metrics.NewHistogram(bounds), metrics.NewHistogram(bounds)
	a.Observe(time.Millisecond)
	before := a.Snapshot()
	a.Observe(5 * time.Millisecond)
	a.Observe(time.Hour)
	b.Observe(500 * time.Microsecond)
	d, ok := a.Snapshot().Sub(before)
	if !ok || d.Count != 2 || !slices.Equal(d.Cumulative, []uint64{0, 1, 2}) || d.Sum != 5*time.Millisecond+time.Hour {
		t.Fatalf("Sub = %+v, %v", d, ok)
	}
	sum, ok := d.Add(b.Snapshot())
	if !ok || sum.Count != 3 || !slices.Equal(sum.Cumulative, []uint64{1, 2, 3}) {
		t.Fatalf("Add = %+v, %v", sum, ok)
	}
	if z, ok := (metrics.HistogramSnapshot{}).Add(sum); !ok || z.Count != 3 {
		t.Fatalf("zero + sum = %+v, %v", z, ok)
	}
	if _, ok := before.Sub(a.Snapshot()); ok {
		t.Fatal("Sub of a later snapshot (counts going down) ok")
	}
	other := metrics.NewHistogram(nil).Snapshot()
	if _, ok := d.Sub(other); ok {
		t.Fatal("Sub across different bounds ok")
	}
	if _, ok := d.Add(other); ok {
		t.Fatal("Add across different bounds ok")
	}
}

func TestHistogramRejectsBadBounds(t *testing.T) {
	for _, b := range [][]time.Duration{{0}, {2, 1}, {1, 1}, make([]time.Duration, metrics.MaxBuckets+1)} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewHistogram(%v) did not panic", b)
				}
			}()
			metrics.NewHistogram(b)
		}()
	}
}

// Concurrent observers lose nothing, and a snapshot taken meanwhile always
// has cumulative buckets whose +Inf equals Count.
func TestHistogramConcurrent(t *testing.T) {
	h := metrics.NewHistogram(nil)
	const workers, each = 4, 10000
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var snaps sync.WaitGroup
	snaps.Add(1)
	go func() {
		defer snaps.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := h.Snapshot()
			for i := 1; i < len(s.Cumulative); i++ {
				if s.Cumulative[i] < s.Cumulative[i-1] {
					t.Errorf("not cumulative: %v", s.Cumulative)
					return
				}
			}
			if s.Cumulative[len(s.Cumulative)-1] != s.Count {
				t.Errorf("+Inf %d != count %d", s.Cumulative[len(s.Cumulative)-1], s.Count)
				return
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				h.Observe(time.Duration(w*each+i) * time.Microsecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	snaps.Wait()
	if s := h.Snapshot(); s.Count != workers*each {
		t.Fatalf("count = %d, want %d", s.Count, workers*each)
	}
}

func TestHistogramQuantile(t *testing.T) {
	h := metrics.NewHistogram([]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 40 * time.Millisecond})
	for range 90 {
		h.Observe(5 * time.Millisecond)
	}
	for range 10 {
		h.Observe(30 * time.Millisecond)
	}
	s := h.Snapshot()
	if q := s.Quantile(0.5); q <= 0 || q > 10*time.Millisecond {
		t.Fatalf("p50 = %v, want within the first bucket", q)
	}
	if q := s.Quantile(0.99); q <= 20*time.Millisecond || q > 40*time.Millisecond {
		t.Fatalf("p99 = %v, want in (20ms, 40ms]", q)
	}
	h.Observe(time.Hour)
	if q := h.Snapshot().Quantile(1); q != 40*time.Millisecond {
		t.Fatalf("p100 with an observation in +Inf = %v, want the highest bound", q)
	}
	if q := metrics.NewHistogram(nil).Snapshot().Quantile(0.99); q != 0 {
		t.Fatalf("empty p99 = %v", q)
	}
}

// BenchmarkHistogramObserve is the cost an instrumented hot path pays per
// observation (plus one time.Now for its start).
func BenchmarkHistogramObserve(b *testing.B) {
	h := metrics.NewHistogram(nil)
	for i := 0; b.Loop(); i++ {
		h.Observe(time.Duration(i&0xffff) * 10 * time.Microsecond)
	}
}

func BenchmarkHistogramSince(b *testing.B) {
	h := metrics.NewHistogram(nil)
	for b.Loop() {
		h.Since(time.Now())
	}
}
