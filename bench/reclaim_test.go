package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// reclaimSamples builds one sample every 2 ms from t0 (unix µs) whose
// kdamond CPU time grows by the given µs in each interval.
func reclaimSamples(t0 int64, deltaUs ...int64) []speedSample {
	s := make([]speedSample, len(deltaUs)+1)
	var cum int64
	s[0] = speedSample{start: t0, ns: 10_000}
	for i, d := range deltaUs {
		cum += d * 1000
		s[i+1] = speedSample{start: t0 + int64(i+1)*2000, ns: 10_000, reclaimNs: cum}
	}
	return s
}

func TestReclaimWindows(t *testing.T) {
	const t0 = 1_700_000_000_000_000
	// Its sampling (50 µs here and there, one lone 300 µs interval: too
	// little CPU in all), then a 4-interval burst of 1.5 ms each, then a
	// trailing 2-interval burst of 2 ms and 5 ms (more CPU than the span:
	// schedstat was updated late).
	s := reclaimSamples(t0, 50, 0, 300, 0, 0, 1500, 1500, 1500, 1500, 0, 50, 0, 2000, 5000)
	got := reclaimWindows(s)
	if len(got) != 2 {
		t.Fatalf("windows %+v, want two", got)
	}
	// The burst runs from sample 5's start (the interval before the first
	// busy read) to sample 9's.
	if w := got[0]; w.StartUnixMs != float64(t0+5*2000)/1e3 || w.Ms != 8 || w.CPUMs != 6 {
		t.Fatalf("first window %+v, want start %v, 8 ms, 6 ms of CPU", w, float64(t0+5*2000)/1e3)
	}
	if w := got[1]; w.StartUnixMs != float64(t0+12*2000)/1e3 || w.Ms != 7 || w.CPUMs != 7 {
		t.Fatalf("trailing window %+v, want 7 ms (its CPU time) with 7 ms of CPU", w)
	}
	r := summarizeReclaim(&reclaimWatch{threads: []string{"kdamond.0 (pid 78)"}}, s, 0.028, "paddr")
	if math.Abs(r.CPUSeconds-0.0134) > 1e-9 || math.Abs(r.Seconds-0.015) > 1e-9 || math.Abs(r.Fraction-0.015/0.028) > 1e-9 {
		t.Fatalf("summary %+v", r)
	}
	if got := reclaimWindows(reclaimSamples(t0)); len(got) != 0 {
		t.Fatalf("one sample: %+v", got)
	}
}

func TestExcludedMergesSlowAndReclaimWindows(t *testing.T) {
	s := &CPUSlowdowns{
		Windows: []SlowWindow{{StartUnixMs: 100, Ms: 10, Slowdown: 5}, {StartUnixMs: 300, Ms: 5, Slowdown: 4}},
		Reclaim: &KernelReclaim{Windows: []ReclaimWindow{{StartUnixMs: 105, Ms: 20}, {StartUnixMs: 200, Ms: 30}, {StartUnixMs: 301, Ms: 1}}},
	}
	got := s.excluded()
	want := []SlowWindow{{StartUnixMs: 100, Ms: 25, Slowdown: 5}, {StartUnixMs: 200, Ms: 30}, {StartUnixMs: 300, Ms: 5, Slowdown: 4}}
	if len(got) != len(want) {
		t.Fatalf("excluded %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("excluded %+v, want %+v", got, want)
		}
	}
	if len(s.Windows) != 2 || s.Windows[0].Ms != 10 {
		t.Fatalf("excluded changed the slow windows: %+v", s.Windows)
	}
	// A record in flight only during the reclaim window at 200 ms is left out.
	if !overlapsAny(got, 210_000, 215_000) || overlapsAny(got, 240_000, 250_000) {
		t.Fatal("overlapsAny over the merged windows")
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReclaimWatchFindsKdamond(t *testing.T) {
	proc := t.TempDir()
	writeFiles(t, proc, map[string]string{
		"1/comm":       "init\n",
		"1/schedstat":  "999 0 1\n",
		"78/comm":      "kdamond.0\n",
		"78/schedstat": "105511475 20273129 238\n",
		"self/comm":    "kdamond.fake\n", // not a pid: skipped
	})
	w := newReclaimWatch(proc)
	if w == nil {
		t.Fatal("no watch")
	}
	defer w.close()
	if strings.Join(w.threads, ",") != "kdamond.0 (pid 78)" {
		t.Fatalf("threads %q", w.threads)
	}
	if got := w.cpuNs(); got != 105511475 {
		t.Fatalf("cpuNs %d", got)
	}
	// schedstat is read again at every sample.
	writeFiles(t, proc, map[string]string{"78/schedstat": "205511475 20273129 239\n"})
	if got := w.cpuNs(); got != 205511475 {
		t.Fatalf("cpuNs after an update %d", got)
	}
	if w := newReclaimWatch(t.TempDir()); w != nil {
		t.Fatalf("watch without kdamond: %+v", w)
	}
	if _, ok := parseSchedstat([]byte("")); ok {
		t.Fatal("empty schedstat parsed")
	}
	if _, ok := parseSchedstat([]byte("-5 1 2")); ok {
		t.Fatal("negative schedstat parsed")
	}
}

func TestDAMONConfig(t *testing.T) {
	dir := t.TempDir()
	ctx := "kdamonds/0/contexts/0/"
	writeFiles(t, dir, map[string]string{
		"kdamonds/nr_kdamonds":                       "1\n",
		"kdamonds/0/state":                           "on\n",
		ctx + "operations":                           "paddr\n",
		ctx + "monitoring_attrs/intervals/sample_us": "500000\n",
		ctx + "schemes/0/action":                     "pageout\n",
		ctx + "schemes/0/quotas/ms":                  "50\n",
		ctx + "schemes/0/quotas/reset_interval_ms":   "1000\n",
		"kdamonds/1/state":                           "off\n",
		"kdamonds/1/contexts/0/operations":           "vaddr\n",
	})
	if got, want := damonConfig(dir), "paddr, sampled every 500ms, pageout up to 50ms per 1s"; got != want {
		t.Fatalf("damonConfig %q, want %q", got, want)
	}
	writeFiles(t, dir, map[string]string{"kdamonds/0/state": "off\n"})
	if got := damonConfig(dir); got != "" {
		t.Fatalf("no running kdamond: %q", got)
	}
	if got := damonConfig(filepath.Join(dir, "absent")); got != "" {
		t.Fatalf("no sysfs: %q", got)
	}
}

// The report names kdamond, its windows and DAMON's configuration, and the
// clear latency says it leaves reclaim out too; bench cpu lists at most
// maxReclaimWindowsListed windows.
func TestReclaimInReport(t *testing.T) {
	rec := &KernelReclaim{Threads: []string{"kdamond.0 (pid 78)"}, DAMON: "paddr, sampled every 500ms", CPUSeconds: 0.25, Seconds: 0.5, Fraction: 0.05}
	for i := 0; i < maxReclaimWindowsListed+3; i++ {
		rec.Windows = append(rec.Windows, ReclaimWindow{StartUnixMs: float64(1_700_000_000_000 + 500*i), Ms: 30, CPUMs: 25})
	}
	slow := &CPUSlowdowns{ChunkUs: 10, Windows: []SlowWindow{}, Reclaim: rec}
	lat := Percentiles{Count: 90, P50: 7, P99: 13}
	rep := &Report{
		Throughput: &ThroughputResult{HalfLoad: &HalfLoad{Records: 100, CPUSlowdowns: slow, ClearLatency: &lat, ClearOf: 100}},
		CPUProbe:   slow,
	}
	var out strings.Builder
	rep.WriteTable(&out)
	s := out.String()
	for _, want := range []string{
		"kernel reclaim (half load)",
		"kdamond.0 (pid 78) on the CPU 0.25s; 23 windows, 0.50s in all (5.0% of the run) [DAMON paddr, sampled every 500ms]",
		"produce latency (half load, clear of slowdowns and reclaim)",
		"reclaim window 20 ",
		"3 more in the JSON",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "reclaim window 21") {
		t.Errorf("report lists more than %d reclaim windows:\n%s", maxReclaimWindowsListed, s)
	}
}
