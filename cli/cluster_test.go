package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// clusterStatusJSONOf runs `cluster status --json` and decodes it.
func clusterStatusJSONOf(t *testing.T, bs string) map[string]any {
	t.Helper()
	out, errOut, code := runClientCLI(t, nil, "cluster", "status", "--json", bs)
	if code != 0 {
		t.Fatalf("cluster status --json: %d %q", code, errOut)
	}
	var st map[string]any
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	return st
}

// With an active controller the states are current; without one (the node
// answers controller_id -1) they are the last ones known, and cluster status
// says so: in JSON with states_stale, next to the documented keys, and in
// the table next to each state.
func TestClusterStatusMarksStatesStaleWithoutController(t *testing.T) {
	fc := startFakeCluster(t)
	bs := "--bootstrap=" + fc.Bootstrap()

	fc.SetController(2)
	st := clusterStatusJSONOf(t, bs)
	if st["controller_id"] != float64(2) || st["states_stale"] != false {
		t.Fatalf("with controller 2: %v", st)
	}
	out, _, code := runClientCLI(t, nil, "cluster", "status", bs)
	if code != 0 || strings.Contains(out, "stale") || !strings.Contains(out, "Alive: 3/3") {
		t.Fatalf("with controller 2: %d %q", code, out)
	}

	fc.SetController(-1)
	st = clusterStatusJSONOf(t, bs)
	if st["controller_id"] != float64(-1) || st["states_stale"] != true {
		t.Fatalf("without a controller: %v", st)
	}
	// The documented keys are all still there (DESIGN §7).
	if _, ok := st["metadata_offset"]; !ok {
		t.Fatalf("metadata_offset missing: %v", st)
	}
	nodes := st["nodes"].([]any)
	if len(nodes) != 3 {
		t.Fatalf("nodes: %v", nodes)
	}
	for _, n := range nodes {
		m := n.(map[string]any)
		for _, k := range []string{"id", "addr", "state", "controller_eligible"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("node key %q missing: %v", k, m)
			}
		}
		if m["state"] != "alive" {
			t.Fatalf("state %v, want the last known one (alive)", m["state"])
		}
	}
	out, _, code = runClientCLI(t, nil, "cluster", "status", bs)
	if code != 0 || !strings.Contains(out, "Active controller: none") ||
		!strings.Contains(out, "Alive: unknown (last known 3/3)") ||
		strings.Count(out, "alive (stale)") != 3 || !strings.Contains(out, "states are the last ones known") {
		t.Fatalf("without a controller: %d %q", code, out)
	}
}
