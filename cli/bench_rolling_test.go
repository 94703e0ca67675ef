package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBenchRolling rolls a local 3-node cluster (this test binary acting as
// paymentlog) once under a light acks=all load: three restarts, each gated
// by /safe-to-stop and /readyz, the controller last, nothing lost, and no
// partition below its min ISR at any time nor a write refused for it.
func TestBenchRolling(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster")
	}
	t.Setenv(asBinaryEnv, "1")
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "bench.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr strings.Builder
	start := time.Now()
	code := RunContext(ctx, []string{"paymentlog", "bench", "rolling", "--base-dir", dir,
		"--failover-rate", "600", "--failover-timeout", "20s", "--json", jsonPath}, &stdout, &stderr)
	t.Logf("%v; stdout:\n%s\nstderr:\n%s", time.Since(start), stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit status %d", code)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Rolling *struct {
			Restarts []struct {
				Node               int32              `json:"node"`
				WasController      bool               `json:"was_controller"`
				SafeToStopWaitMs   *float64           `json:"safe_to_stop_wait_ms"`
				ShutdownMs         float64            `json:"shutdown_ms"`
				ReadyMs            float64            `json:"ready_ms"`
				ReadyRefusals      int                `json:"ready_refusals"`
				UnavailableMs      float64            `json:"unavailable_ms"`
				PartitionGapsMs    []float64          `json:"partition_gap_ms"`
				ProduceErrors      map[string]float64 `json:"produce_errors"`
				MaxProduceLatency  float64            `json:"max_produce_latency_ms"`
				BelowMinISRMs      *float64           `json:"below_min_isr_ms"`
				Error              string             `json:"error"`
				SafeToStopRefusals *int               `json:"safe_to_stop_refusals"`
			} `json:"restarts"`
			UnavailableMs map[string]float64 `json:"unavailable_ms"`
			ShutdownMs    map[string]float64 `json:"shutdown_ms"`
			ReadyMs       map[string]float64 `json:"ready_ms"`
			SafeWaitMs    map[string]float64 `json:"safe_to_stop_wait_ms"`
			ProduceErrors map[string]float64 `json:"produce_errors"`
			LostRecords   *int64             `json:"lost_records"`
			Duplicates    *int64             `json:"duplicates"`
			Verified      int64              `json:"verified"`
			Acked         int64              `json:"acked"`
			BelowMinISRMs *float64           `json:"below_min_isr_ms"`
		} `json:"rolling"`
		Config struct {
			Rolling map[string]any `json:"rolling"`
		} `json:"config"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	ro := rep.Rolling
	if ro == nil {
		t.Fatalf("no rolling key in the JSON:\n%s", b)
	}
	if len(ro.Restarts) != 3 {
		t.Fatalf("%d restarts, want 3", len(ro.Restarts))
	}
	seen := map[int32]bool{}
	for i, rs := range ro.Restarts {
		seen[rs.Node] = true
		switch {
		case rs.Error != "":
			t.Errorf("restart %d: %s", i+1, rs.Error)
		case rs.SafeToStopWaitMs == nil || *rs.SafeToStopWaitMs < 0 || rs.SafeToStopRefusals == nil:
			t.Errorf("restart %d: no /safe-to-stop wait measured", i+1)
		case rs.ShutdownMs <= 0:
			t.Errorf("restart %d: controlled shutdown %v ms", i+1, rs.ShutdownMs)
		// A restarted node is not ready at once: it registers and catches
		// up first, so /readyz refused at least once.
		case rs.ReadyMs <= 0 || rs.ReadyRefusals == 0:
			t.Errorf("restart %d: ready after %v ms, %d refusals", i+1, rs.ReadyMs, rs.ReadyRefusals)
		case rs.UnavailableMs <= 0 || len(rs.PartitionGapsMs) != 3 || rs.MaxProduceLatency <= 0:
			t.Errorf("restart %d: unavailable %v ms, gaps %v, max latency %v", i+1, rs.UnavailableMs, rs.PartitionGapsMs, rs.MaxProduceLatency)
		}
		// Gated by /safe-to-stop and /readyz, no partition ever has fewer
		// in-sync replicas than its min ISR, so no write is refused for it
		// (a roll that stops the next node before the last one is back in
		// every ISR makes both happen).
		if rs.BelowMinISRMs == nil || *rs.BelowMinISRMs != 0 {
			t.Errorf("restart %d: below min ISR %v ms", i+1, fmtPtr(rs.BelowMinISRMs))
		}
		if rs.ProduceErrors["NotEnoughReplicas"] != 0 || rs.ProduceErrors["NotEnoughReplicasAfterAppend"] != 0 {
			t.Errorf("restart %d: produce errors %v", i+1, rs.ProduceErrors)
		}
	}
	if len(seen) != 3 {
		t.Errorf("restarted nodes %v, want each of 3 once", seen)
	}
	// The active controller went last (it stays the controller while the
	// others restart: a broker's controlled shutdown does not move it).
	for i, rs := range ro.Restarts[:2] {
		if rs.WasController {
			t.Errorf("restart %d (node %d) was the controller before the last", i+1, rs.Node)
		}
	}
	if !ro.Restarts[2].WasController {
		t.Errorf("the last restart (node %d) was not the active controller", ro.Restarts[2].Node)
	}
	for name, s := range map[string]map[string]float64{"unavailable_ms": ro.UnavailableMs, "shutdown_ms": ro.ShutdownMs, "ready_ms": ro.ReadyMs, "safe_to_stop_wait_ms": ro.SafeWaitMs} {
		if s["n"] != 3 || s["max"] < s["p50"] {
			t.Errorf("rolling.%s = %v", name, s)
		}
	}
	if ro.LostRecords == nil || *ro.LostRecords != 0 || ro.Duplicates == nil || *ro.Duplicates != 0 || ro.Verified == 0 || ro.Verified != ro.Acked {
		t.Errorf("read-back: lost %v, duplicates %v, verified %d of %d", ro.LostRecords, ro.Duplicates, ro.Verified, ro.Acked)
	}
	if ro.ProduceErrors == nil || ro.BelowMinISRMs == nil {
		t.Errorf("rolling.produce_errors %v, below_min_isr_ms %v", ro.ProduceErrors, ro.BelowMinISRMs)
	}
	if rep.Config.Rolling["Rounds"] != float64(1) {
		t.Errorf("config.rolling = %v", rep.Config.Rolling)
	}
	for _, s := range []string{"ROLLING RESTART", "controlled shutdown", "start → ready", "(controller)"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("the table lacks %q", s)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "paymentlog-cluster-*")); len(m) != 0 {
		t.Errorf("cluster directory left behind: %v", m)
	}
}

func fmtPtr(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
