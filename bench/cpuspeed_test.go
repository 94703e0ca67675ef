package bench

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

// samplesOf builds one sample every 2 ms from t0 (unix µs) with the given
// chunk times in µs.
func samplesOf(t0 int64, us ...int64) []speedSample {
	s := make([]speedSample, len(us))
	for i, u := range us {
		s[i] = speedSample{start: t0 + int64(i)*2000, ns: u * 1000}
	}
	return s
}

func TestSlowWindows(t *testing.T) {
	const t0 = 1_700_000_000_000_000
	// 20 µs chunks; a single preempted sample (index 2), a run of two slow
	// samples (too short), and a run of four at 8x, 10x, 10x, 10.5x (a
	// window whose slowdown is its median, 10x, not its first sample).
	s := samplesOf(t0, 20, 20, 300, 20, 100, 90, 20, 20, 160, 200, 200, 210, 20, 20, 20, 20, 20, 20, 20, 20)
	sum := summarizeSlowdowns(s, 40*time.Millisecond)
	if sum.ChunkUs != 20 || sum.Samples != len(s) {
		t.Fatalf("chunk %v µs over %d samples, want 20 over %d", sum.ChunkUs, sum.Samples, len(s))
	}
	if len(sum.Windows) != 1 {
		t.Fatalf("windows %+v, want one", sum.Windows)
	}
	w := sum.Windows[0]
	// From sample 8's start to sample 11's end: 3 × 2 ms + 0.21 ms.
	if w.StartUnixMs != float64(t0+8*2000)/1e3 || math.Abs(w.Ms-6.21) > 1e-9 || w.Slowdown != 10 {
		t.Fatalf("window %+v, want start %v, 6.21 ms, slowdown 10", w, float64(t0+8*2000)/1e3)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if !near(sum.Seconds, 0.00621) || sum.MaxSlowdown != 10 || !near(sum.Fraction, 0.00621/0.04) {
		t.Fatalf("summary %+v", sum)
	}
	// A run at the end of the samples counts too.
	s = samplesOf(t0, 20, 20, 20, 20, 20, 80, 80, 80)
	if got := slowWindows(s, 20_000); len(got) != 1 || got[0].Slowdown != 4 {
		t.Fatalf("trailing run: %+v", got)
	}
	if got := summarizeSlowdowns(nil, time.Second); len(got.Windows) != 0 || got.Samples != 0 {
		t.Fatalf("no samples: %+v", got)
	}
}

func TestOverlapsAny(t *testing.T) {
	ws := []SlowWindow{{StartUnixMs: 100, Ms: 10}, {StartUnixMs: 200, Ms: 50}}
	for _, c := range []struct {
		from, to int64 // ms
		want     bool
	}{
		{0, 99, false},
		{0, 100, true},   // ends as the first window starts
		{105, 106, true}, // inside
		{110, 111, true}, // starts as the first window ends
		{111, 199, false},
		{150, 300, true}, // spans the second
		{251, 400, false},
		{90, 260, true},
	} {
		if got := overlapsAny(ws, c.from*1000, c.to*1000); got != c.want {
			t.Errorf("[%d, %d] ms: overlaps %v, want %v", c.from, c.to, got, c.want)
		}
	}
	if overlapsAny(nil, 0, 1<<40) {
		t.Error("no windows overlap nothing")
	}
}

// TestBoundedTrace keeps its first limit rows and drops the rest.
func TestBoundedTrace(t *testing.T) {
	tr := newLatencyTrace(1000, time.Second, 3)
	now := time.Now()
	for i := range 5 {
		s := now.Add(time.Duration(i) * time.Millisecond)
		tr.add(s, s.Add(time.Millisecond), s, 0, 0)
	}
	if len(tr.rows) != 3 || tr.rows[2].start != now.Add(2*time.Millisecond).UnixMicro() {
		t.Fatalf("bounded trace kept %d rows: %+v", len(tr.rows), tr.rows)
	}
	if _, n := tr.clearOf(nil); n != 3 {
		t.Fatalf("clearOf looked at %d rows, want 3", n)
	}
}

// TestClearOf keeps only the records whose whole latency misses every window.
func TestClearOf(t *testing.T) {
	base := time.UnixMicro(1_700_000_000_000_000)
	tr := newLatencyTrace(10, time.Second, 0)
	add := func(startMs, latMs int) {
		s := base.Add(time.Duration(startMs) * time.Millisecond)
		tr.add(s, s.Add(time.Duration(latMs)*time.Millisecond), s, 0, 0)
	}
	add(0, 3)   // clear
	add(5, 30)  // runs into the window
	add(12, 4)  // inside it
	add(40, 5)  // clear, after it
	add(19, 21) // starts in it
	w := []SlowWindow{{StartUnixMs: float64(base.Add(10*time.Millisecond).UnixMicro()) / 1e3, Ms: 10}}
	p, n := tr.clearOf(w)
	if n != 5 {
		t.Fatalf("clearOf looked at %d rows, want 5", n)
	}
	if p.Count != 2 || math.Abs(p.Max-5) > 0.01 || math.Abs(p.P50-3) > 0.01 { // HDR rounding
		t.Fatalf("clear records: %+v, want 2 (3 and 5 ms)", p)
	}
}

// TestSpeedProbeSamples runs the probe until it has five samples and checks
// that they are summarised and ordered. Nothing here depends on the machine
// being fast or steady.
func TestSpeedProbeSamples(t *testing.T) {
	p := startSpeedProbe(200 * time.Millisecond)
	deadline := time.Now().Add(20 * time.Second)
	for p.taken.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s := p.stop()
	if s.Samples < 5 || s.ChunkUs <= 0 {
		t.Fatalf("probe took %d samples, median chunk %v µs", s.Samples, s.ChunkUs)
	}
	for i := 1; i < len(p.samples); i++ {
		if p.samples[i].start < p.samples[i-1].start {
			t.Fatalf("samples out of order at %d", i)
		}
	}
}

// TestRunCPUMode: `bench cpu` runs the probe alone, for the configured
// duration, without starting a cluster, and prints its section.
func TestRunCPUMode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Mode = ModeCPU
	cfg.Throughput.Duration = 100 * time.Millisecond
	cfg.Progress = io.Discard
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Samples are not required: a starved CI machine may not run the probe
	// within 100 ms (TestSpeedProbeSamples waits for them).
	if rep.CPUProbe == nil || rep.CPUProbe.PhaseSeconds < 0.1 || rep.Throughput != nil || rep.Transport != nil || rep.Config.Cluster != nil {
		t.Fatalf("cpu mode report: %+v", rep)
	}
	var out strings.Builder
	rep.WriteTable(&out)
	if !strings.Contains(out.String(), "CPU SPEED") || !strings.Contains(out.String(), "slowdowns") {
		t.Fatalf("table:\n%s", out.String())
	}
}
