package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// The paced connections move what their pace allows, no more, and report
// the CPU they took and what it leaves.
func TestTransportAtTargetKeepsItsPace(t *testing.T) {
	// 0.75 × 8 MB/s ÷ 3: each of the 3 connections paced at 2 MB/s, slow
	// enough to be kept under the race detector.
	cfg := TransportConfig{Duration: 500 * time.Millisecond, Rounds: 2, Streams: 1, Chunk: 16 << 10}
	res, err := runTransportAtTarget(context.Background(), cfg, 8, 3, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", res)
	if res.Connections != 3 || res.PaceMBPerSec != 2 || res.Share != TargetShare {
		t.Fatalf("set up %d connections at %.2f MB/s (share %.2f), want 3 at 2", res.Connections, res.PaceMBPerSec, res.Share)
	}
	// Unpaced, three loopback connections move hundreds of MB/s; paced, at
	// most 6 MB/s together, give or take a chunk a connection (0.1 MB/s
	// here). (Less only if the machine starves the receivers: kept_pace
	// says so, and the budget is then withheld.)
	if res.MBPerSec > 6.6 || res.MBPerSec <= 0 {
		t.Fatalf("moved %.2f MB/s (kept pace %v), want at most 6 MB/s", res.MBPerSec, res.KeptPace)
	}
	if len(res.CPURounds) != 2 || res.CPUs <= 0 || res.CPUMsPerMB <= 0 {
		t.Fatalf("CPU %.3f CPUs (%v), %.2f ms per MB", res.CPUs, res.CPURounds, res.CPUMsPerMB)
	}
	if want := restBudget(2, res.CPUs, 2, res.KeptPace); res.RestMsPerPayloadMB != want || (res.KeptPace && want <= 0) {
		t.Fatalf("rest %.1f ms per payload MB, want %.1f", res.RestMsPerPayloadMB, want)
	}
}

func TestRestBudget(t *testing.T) {
	for _, c := range []struct {
		cpus       int
		used, pace float64
		kept       bool
		want       float64
	}{
		{2, 1.55, 155, true, 2.9}, // 0.45 CPU at 155 MB/s of payload
		{2, 1.0, 100, true, 10},   // a whole CPU at 100 MB/s
		{2, 2.1, 155, true, 0},    // the transport took more than the machine
		{2, 1.0, 100, false, 0},   // and could not keep the pace
		{4, 1.0, 0, true, 0},      // no pace
	} {
		if got := restBudget(c.cpus, c.used, c.pace, c.kept); got < c.want-0.05 || got > c.want+0.05 {
			t.Errorf("restBudget(%d, %.2f, %.0f, %v) = %.2f, want %.1f", c.cpus, c.used, c.pace, c.kept, got, c.want)
		}
	}
}

// A missed share target gives, beside the run's CPU per payload MB, what
// the transport alone took at the target and what that leaves.
func TestShareMissSaysWhatTheTransportAloneTookAtTheTarget(t *testing.T) {
	res := roundResult("a", 120, 300, 40, 0)
	res.TransportRatio = 0.5
	res.NodeCPUMsPerMB, res.BenchCPUMsPerMB, res.TransportCPUMsPerMB = 13.2, 3.6, 8.2
	res.CPU = &CPUUsage{WallSeconds: 8, Utilization: 1.9, MachineBusy: 0.97}
	at := &TransportAtTarget{Share: 0.75, Connections: 3, PaceMBPerSec: 155, MBPerSec: 465, CPUs: 1.55, CPUMsPerMB: 3.33, KeptPace: true, MachineCPUs: 2}
	at.RestMsPerPayloadMB = restBudget(2, at.CPUs, at.PaceMBPerSec, true)
	rep := &Report{Throughput: res, Transport: &TransportResult{MBPerSec: 620, AtTarget: at}}
	rep.Config.Machine = map[string]any{"cpus": 2}
	rep.checkTargets(DefaultConfig())
	want := "; at the target 3 raw connections at once, each paced at 155.0 MB/s (0.75 × raw ÷ 3), took 1.55 of 2 CPUs alone (3.33 ms per MB moved), leaving 2.9 ms of CPU per payload MB for everything else (storage, the protocol, the producers); this run spent 6.8 ms per payload MB on it (nodes + bench beyond 3 × 3.33 ms)"
	found := false
	for _, tc := range rep.Targets {
		switch tc.Name {
		case "share of the transport ceiling":
			found = true
			if !strings.HasSuffix(tc.Why, want) || !strings.HasPrefix(tc.Why, "full load: ") {
				t.Errorf("share: why %q\nwant it to end %q", tc.Why, want)
			}
		default:
			if strings.Contains(tc.Why, "at the target") {
				t.Errorf("%s: why %q gives the transport at the target", tc.Name, tc.Why)
			}
		}
	}
	if !found {
		t.Fatalf("no share target judged: %+v", rep.Targets)
	}
	var out bytes.Buffer
	rep.WriteTable(&out)
	if !strings.Contains(out.String(), "at the target share") {
		t.Errorf("the transport section does not give the measurement:\n%s", out.String())
	}

	at.KeptPace, at.RestMsPerPayloadMB, at.MBPerSec = false, 0, 400
	if s := at.summary(); !strings.Contains(s, "could not keep the pace (400.0 MB/s moved of 465.0)") {
		t.Errorf("a pace not kept: %q", s)
	}
}
