package bench

import "testing"

func roundResult(topic string, mb, p99, halfP99 float64, fencings int) *ThroughputResult {
	return &ThroughputResult{
		Topic: topic, Records: 100, Seconds: 1, RecordsPerSec: mb * 1000, MBPerSec: mb, ReplicatedMBPerSec: 3 * mb,
		ProduceLatency: Percentiles{Count: 100, P50: p99 / 2, P99: p99, Max: p99 * 2},
		HalfLoad: &HalfLoad{TargetRate: mb * 500, RecordsPerSec: mb * 500, Records: 50,
			ProduceLatency: Percentiles{Count: 50, P50: halfP99 / 3, P99: halfP99, Max: halfP99 + 1}},
		Consume: &Consume{Records: 100, Seconds: 0.5, RecordsPerSec: 200, MBPerSec: mb * 2},
		Changes: Changes{Fencings: fencings},
		CPU:     &CPUUsage{},
	}
}

// Three rounds combine into the median of each figure on its own, the sums
// of the counts, the largest max, and the median-throughput round's CPU.
func TestCombineRoundsTakesMediansOfEachFigure(t *testing.T) {
	a := roundResult("a", 90, 300, 30, 0)
	b := roundResult("b", 110, 100, 10, 1)
	c := roundResult("c", 100, 200, 20, 0)
	got := combineRounds([]*ThroughputResult{a, b, c})
	if got.MBPerSec != 100 || got.RecordsPerSec != 100000 || got.ReplicatedMBPerSec != 300 {
		t.Errorf("throughput %v MB/s, %v records/s, %v replicated; want the medians 100, 100000, 300", got.MBPerSec, got.RecordsPerSec, got.ReplicatedMBPerSec)
	}
	if p := got.ProduceLatency; p.P99 != 200 || p.P50 != 100 || p.Max != 600 || p.Count != 300 {
		t.Errorf("full-load latency %+v; want p50 100, p99 200, max 600 (largest), count 300", p)
	}
	if h := got.HalfLoad; h == nil || h.ProduceLatency.P99 != 20 || h.ProduceLatency.Max != 31 || h.Records != 150 || h.RecordsPerSec != 50000 {
		t.Errorf("half load %+v; want p99 20 (median), max 31, 150 records, 50000 records/s", h)
	}
	if got.Records != 300 || got.Seconds != 3 || got.Changes.Fencings != 1 {
		t.Errorf("records %d, seconds %v, fencings %d; want the sums 300, 3, 1", got.Records, got.Seconds, got.Changes.Fencings)
	}
	if got.Consume == nil || got.Consume.MBPerSec != 200 || got.Consume.Records != 300 {
		t.Errorf("consume %+v", got.Consume)
	}
	if got.CPU != c.CPU {
		t.Error("CPU is not the median-throughput round's")
	}
	if len(got.Rounds) != 3 || got.Rounds[1].Topic != "b" || got.Rounds[1].HalfLoad.P99 != 10 || got.Rounds[1].Changes.Fencings != 1 {
		t.Errorf("rounds %+v", got.Rounds)
	}
	// The inputs are untouched (the combined result is a copy).
	if c.Records != 100 || c.HalfLoad.Records != 50 || c.Rounds != nil {
		t.Errorf("median round mutated: %+v", c)
	}
	// The targets are judged on the medians and on every round's changes.
	rep := &Report{Throughput: got}
	cfg := DefaultConfig()
	rep.checkTargets(cfg)
	for _, tc := range rep.Targets {
		switch tc.Name {
		case "produce p99 ms at half load":
			if tc.Value != 20 {
				t.Errorf("%s judged on %v, want the median 20", tc.Name, tc.Value)
			}
		case "ISR shrinks + fencings without faults (and partition changes between polls)":
			if tc.Met {
				t.Errorf("%s met although round b fenced a broker", tc.Name)
			}
		}
	}
}

// One round is reported as it ran; a round without a half-load run (it
// failed) leaves the medians to the rounds that have one.
func TestCombineRoundsOneAndPartial(t *testing.T) {
	a := roundResult("a", 90, 300, 30, 0)
	if got := combineRounds([]*ThroughputResult{a}); got != a || got.Rounds != nil {
		t.Errorf("one round: got %p %+v, want the round itself", got, got.Rounds)
	}
	b := roundResult("b", 110, 100, 10, 0)
	b.HalfLoad, b.Consume, b.FirstError = nil, nil, "boom"
	got := combineRounds([]*ThroughputResult{a, b})
	if got.MBPerSec != 110 || got.HalfLoad == nil || got.HalfLoad.ProduceLatency.P99 != 30 || got.FirstError != "boom" {
		t.Errorf("partial: %v MB/s, half load %+v, first error %q", got.MBPerSec, got.HalfLoad, got.FirstError)
	}
}
