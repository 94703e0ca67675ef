package bench

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
)

// A missed target carries the run's measurements that bear on it, in the JSON
// and beside the verdict; a met one carries none.
func TestMissedTargetsSayWhatTheRunMeasured(t *testing.T) {
	res := roundResult("a", 120, 300, 40, 0)
	res.TransportRatio = 0.5
	res.NodeCPUMsPerMB, res.BenchCPUMsPerMB, res.TransportCPUMsPerMB = 12.7, 3.5, 6.9
	res.CPU = &CPUUsage{WallSeconds: 8, Utilization: 1.79, MachineBusy: 0.92}
	res.HalfLoad.CPU = &CPUUsage{WallSeconds: 4, Utilization: 1.39, MachineBusy: 0.73}
	res.HalfLoad.Stages = &LatencyStages{
		BatchQueue: &StageLatency{Count: 1, P99: 9.9},
		Leader:     &StageLatency{Count: 1, P99: 25.9},
		Flush:      &StageLatency{Count: 1, P99: 7.2},
	}
	rep := &Report{Throughput: res}
	rep.Config.Machine = map[string]any{"cpus": 2}
	rep.checkTargets(DefaultConfig())
	want := map[string]string{
		"share of the transport ceiling": "full load: the nodes and the bench used 1.79 of 2 CPUs, the machine 92% busy; nodes 12.7 + bench 3.5 ms of CPU per payload MB, the raw QUIC stream 6.9 ms for the same transfers",
		"produce p99 ms at half load":    "half load: the nodes and the bench used 1.39 of 2 CPUs, the machine 73% busy; p99 by stage: batch queue 9.9 (linger 5ms), on the leader 25.9, log flush 7.2 ms",
	}
	seen := 0
	for _, tc := range rep.Targets {
		w, missed := want[tc.Name]
		if missed {
			seen++
		}
		if tc.Met == missed {
			t.Errorf("%s: met %v, want %v", tc.Name, tc.Met, !missed)
		}
		if tc.Why != w {
			t.Errorf("%s: why %q\nwant %q", tc.Name, tc.Why, w)
		}
	}
	if seen != len(want) {
		t.Fatalf("%d of the %d missed targets judged: %+v", seen, len(want), rep.Targets)
	}
	var out bytes.Buffer
	rep.WriteTable(&out)
	if !strings.Contains(out.String(), "MISSED: half load: the nodes and the bench used 1.39 of 2 CPUs") {
		t.Errorf("the table does not give the half-load miss its why:\n%s", out.String())
	}
}

// Without the CPU and stage measurements (an external cluster), a miss is
// the verdict alone.
func TestMissedTargetWithoutMeasurementsIsTheVerdictAlone(t *testing.T) {
	res := roundResult("a", 120, 300, 40, 0)
	res.CPU = nil
	rep := &Report{Throughput: res}
	rep.checkTargets(DefaultConfig())
	for _, tc := range rep.Targets {
		if tc.Why != "" {
			t.Errorf("%s: why %q from no measurement", tc.Name, tc.Why)
		}
	}
	var out bytes.Buffer
	rep.WriteTable(&out)
	if !regexp.MustCompile(`\(target <= 10\) +MISSED\n`).MatchString(out.String()) {
		t.Errorf("the half-load miss is not the verdict alone:\n%s", out.String())
	}
}

// A run with cluster changes names the first reason the nodes logged beside
// the missed target, and lists them all under the cluster changes.
func TestMissedChangesTargetGivesTheNodesReason(t *testing.T) {
	res := roundResult("a", 120, 300, 9, 0)
	res.Changes = Changes{ISRShrinks: 2, ISRExpands: 1}
	res.ChangeReasons = []string{"node 2, leading t-4, left follower 1 out of the ISR: 8865 records behind", "node 3, leading t-5, left follower 1 out of the ISR: 10 records behind"}
	res.ChangeReasonsMore = 1
	rep := &Report{Throughput: res}
	rep.checkTargets(DefaultConfig())
	var found bool
	for _, tc := range rep.Targets {
		if !strings.HasPrefix(tc.Name, "ISR shrinks + fencings") {
			continue
		}
		found = true
		if want := "node 2, leading t-4, left follower 1 out of the ISR: 8865 records behind (2 more under cluster changes)"; tc.Met || tc.Why != want {
			t.Errorf("met %v, why %q; want missed, %q", tc.Met, tc.Why, want)
		}
	}
	if !found {
		t.Fatal("no ISR shrink target")
	}
	var out bytes.Buffer
	rep.WriteTable(&out)
	for _, want := range []string{"why (node logs)  node 3, leading t-5", "why (node logs)  1 more reasons in the node logs"} {
		if !strings.Contains(regexp.MustCompile(` {2,}`).ReplaceAllString(out.String(), "  "), want) {
			t.Errorf("the table lacks %q:\n%s", want, out.String())
		}
	}
}
