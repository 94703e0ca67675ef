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

// Racks show in cluster status: a RACK column once any node has one ("-"
// for a node without), and "rack" in JSON.
func TestClusterStatusShowsRacks(t *testing.T) {
	fc := startFakeCluster(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	out, _, code := runClientCLI(t, nil, "cluster", "status", bs)
	if code != 0 || strings.Contains(out, "RACK") {
		t.Fatalf("without racks: %d %q", code, out)
	}
	fc.SetRack(1, "eu-1a")
	fc.SetRack(2, "eu-1b")
	out, _, code = runClientCLI(t, nil, "cluster", "status", bs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasSuffix(strings.TrimSpace(lines[1]), "RACK") ||
		!strings.HasSuffix(lines[2], "eu-1a") || !strings.HasSuffix(lines[3], "eu-1b") || !strings.HasSuffix(strings.TrimSpace(lines[4]), "-") {
		t.Fatalf("with racks: %d\n%s", code, out)
	}
	nodes := clusterStatusJSONOf(t, bs)["nodes"].([]any)
	if r := nodes[0].(map[string]any)["rack"]; r != "eu-1a" {
		t.Fatalf("JSON rack of node 0: %v", r)
	}
	if _, ok := nodes[2].(map[string]any)["rack"]; ok {
		t.Fatalf("JSON of a node without a rack: %v", nodes[2])
	}
}
