package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// topic describe --replicas adds a row per replica (its broker's own view),
// and replica_states to --json.
func TestTopicDescribeReplicas(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 2)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\n"), "produce", "t", "--partition", "1", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "topic", "describe", "t", "--replicas", "--bootstrap", fc.Bootstrap())
	if code != 0 || !strings.Contains(out, "PARTITION  REPLICA  ROLE") || strings.Count(out, "leader ") < 2 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, out, errOut)
	}
	rows := 0
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) >= 10 && (f[2] == "leader" || f[2] == "follower") {
			rows++
			if f[0] == "1" && (f[5] != "3" || f[7] != "0") {
				t.Errorf("partition 1 row %q: want log end 3, lag 0", l)
			}
		}
	}
	if rows != 6 {
		t.Fatalf("%d replica rows, want 6 (2 partitions x 3 replicas):\n%s", rows, out)
	}
	out, errOut, code = runClientCLI(t, nil, "topic", "describe", "t", "--replicas", "--json", "--bootstrap", fc.Bootstrap())
	var d struct {
		Partitions []struct {
			ReplicaStates []struct {
				Broker int32 `json:"broker"`
				LogEnd int64 `json:"log_end_offset"`
				Size   int64 `json:"size_bytes"`
			} `json:"replica_states"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || len(d.Partitions) != 2 || len(d.Partitions[1].ReplicaStates) != 3 ||
		d.Partitions[1].ReplicaStates[0].Size <= 0 || d.Partitions[0].ReplicaStates[0].Size != 0 {
		t.Fatalf("--json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	// Without --replicas: no replica table, no replica_states.
	out, _, _ = runClientCLI(t, nil, "topic", "describe", "t", "--json", "--bootstrap", fc.Bootstrap())
	if strings.Contains(out, "replica_states") {
		t.Fatalf("replica_states without --replicas: %s", out)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.0 GiB", 1 << 50: "1.0 PiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
