package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// cluster quorum prints the leader and one row per node, or JSON with
// --json; an argument is a usage error.
func TestClusterQuorum(t *testing.T) {
	fc := startFakeCluster(t)
	out, errOut, code := runClientCLI(t, nil, "cluster", "quorum", "--bootstrap", fc.Bootstrap())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "Leader: 1  Term: 1  Voters: 1,2,3  Observers: -") ||
		!strings.Contains(lines[1], "LAST INDEX") || !strings.Contains(lines[2], "leader") || strings.Contains(lines[3], "leader") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	out, errOut, code = runClientCLI(t, nil, "cluster", "quorum", "--json", "--bootstrap", fc.Bootstrap())
	var st struct {
		LeaderID int32 `json:"leader_id"`
		Voters   []int32
		Members  []struct {
			ID   int32  `json:"id"`
			Role string `json:"role"`
			Lag  int64  `json:"lag"`
		} `json:"members"`
	}
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || st.LeaderID != 1 || len(st.Members) != 3 || st.Members[2].Role != "voter" || st.Members[2].Lag != 0 {
		t.Fatalf("--json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	if _, errOut, code := runClientCLI(t, nil, "cluster", "quorum", "extra", "--bootstrap", fc.Bootstrap()); code != 2 || !strings.Contains(errOut, "takes no arguments") {
		t.Fatalf("argument: exit %d, stderr %q", code, errOut)
	}
}
