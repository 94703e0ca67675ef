package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/bench/chaos"
)

// envInt reads an integer environment variable (def when unset).
func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

// testWriter sends the run's lines to t.Log as they come.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// runChaos runs one chaos run and fails the test on any anomaly.
func runChaos(t *testing.T, cfg chaos.Config) *chaos.Result {
	t.Helper()
	cfg.Binary = binary
	cfg.Out = testWriter{t}
	cfg.KeepOnFailure = true
	if os.Getenv("CHAOS_KEEP") != "" {
		cfg.Keep = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	res, err := chaos.Run(ctx, cfg)
	var b strings.Builder
	if res != nil && res.Report != nil {
		res.WriteSummary(&b)
		t.Log("\n" + b.String())
	}
	if err != nil {
		t.Fatalf("chaos run (seed %d) could not complete: %v", cfg.Seed, err)
	}
	if !res.Report.OK() {
		t.Fatalf("chaos run with seed %d found anomalies (reproduce: CHAOS_SEED=%d go test ./e2e -run %s); cluster kept in %s",
			res.Seed, res.Seed, t.Name(), res.Dir)
	}
	return res
}

// TestChaos is the bounded chaos run of every CI run: at least PerKind
// faults of every available kind against a 3-node cluster under load. The
// seed is random unless CHAOS_SEED is set; it is printed either way.
// CHAOS_PER_KIND (default 20; 3 with -short) and CHAOS_DURATION (e.g. 10m:
// run faults for that long instead of one deck) change its size, and
// CHAOS_NODES (default 3) the cluster's (nodes past the third broker-only).
func TestChaos(t *testing.T) {
	t.Parallel()
	perKind := envInt(t, "CHAOS_PER_KIND", 20)
	if testing.Short() && os.Getenv("CHAOS_PER_KIND") == "" {
		perKind = 3
	}
	cfg := chaos.Config{Seed: envInt(t, "CHAOS_SEED", 0), PerKind: int(perKind), Nodes: int(envInt(t, "CHAOS_NODES", 3))}
	if d := os.Getenv("CHAOS_DURATION"); d != "" {
		dur, err := time.ParseDuration(d)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Duration = dur
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1_000_000_007
	}
	t.Logf("chaos seed %d on %d nodes (reproduce with CHAOS_SEED=%d CHAOS_NODES=%d)", cfg.Seed, cfg.Nodes, cfg.Seed, cfg.Nodes)
	res := runChaos(t, cfg)
	if cfg.Duration == 0 {
		applied := appliedBySchedule(res)
		for _, k := range res.Plan.Kinds {
			if applied[k] < int(perKind) {
				t.Errorf("only %d %s faults injected, want %d", applied[k], k, perKind)
			}
		}
	}
}

// appliedBySchedule counts applied faults by the kind the deck scheduled: a
// kill-leader that found no leader and killed a random node (counted as a
// kill-node in Counts, and in Fallbacks) was still dealt as a kill-leader.
// Torn tails ride on kills; only those that changed a byte count.
func appliedBySchedule(res *chaos.Result) map[chaos.Kind]int {
	out := map[chaos.Kind]int{}
	for _, e := range res.Events {
		if e.Victim != 0 && !e.NotApplied {
			out[e.Fault.Kind]++
		}
	}
	out[chaos.TornTail] = res.Counts[chaos.TornTail]
	return out
}
