package cli

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"paymentlog/internal/freeport"
	"paymentlog/node"
)

// startOneNode runs a one-node cluster (controller and broker) in process on
// 127.0.0.1 and returns its address.
func startOneNode(t *testing.T) string { return startNodes(t, 1) }

// startNodes runs node 1 (controller and broker) and nodes 2..n (brokers
// only) in process on 127.0.0.1 and returns node 1's address.
func startNodes(t *testing.T, n int32) string {
	t.Helper()
	bs, _ := startNodeSet(t, n)
	return bs
}

// startNodeSet is startNodes that also returns the nodes, by id - 1.
func startNodeSet(t *testing.T, n int32) (string, []*node.Node) {
	t.Helper()
	dirs := make([]string, n)
	for i := range dirs {
		dirs[i] = t.TempDir()
	}
	return startNodesIn(t, dirs)
}

// startNodesIn is startNodeSet with node i+1's data directory dirs[i].
func startNodesIn(t *testing.T, dirs []string) (string, []*node.Node) {
	t.Helper()
	n := int32(len(dirs))
	var nodes []*node.Node
	addrs := map[int32]string{}
	for id := int32(1); id <= n; id++ {
		addrs[id] = freeport.UDPAddr(t)
	}
	for id := int32(1); id <= n; id++ {
		cfg := node.DefaultConfig()
		cfg.ID, cfg.Addr, cfg.DataDir = id, addrs[id], dirs[id-1]
		cfg.Controllers = map[int32]string{1: addrs[1]}
		cfg.NoRaftSync = true
		cfg.SegmentBytes = 1 << 20
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		nd, err := node.Start(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nd.Kill)
		nodes = append(nodes, nd)
	}
	// Every node registered and unfenced (node 1's image, the controller's):
	// a topic created before that finds too few brokers for its replicas
	// (CI once saw "replication factor 1 exceeds the 0 available brokers").
	// (30 s, as the node package's waitAlive: nodes starting beside a full
	// -race suite can take over 15 s to register.)
	for deadline := time.Now().Add(30 * time.Second); len(nodes[0].Store().Image().UnfencedBrokers()) < int(n); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d unfenced brokers", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return addrs[1], nodes
}

// oneErrorLine checks a failed command: exit status code and a single
// stderr line containing want.
func oneErrorLine(t *testing.T, what string, code int, errOut string, wantCode int, want string) {
	t.Helper()
	if code != wantCode || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, want) {
		t.Fatalf("%s: exit %d, stderr %q; want exit %d and one line containing %q", what, code, errOut, wantCode, want)
	}
}

// topic alter-config against a real node: --set/--delete before or after
// the topic name and from PAYMENTLOG_TOPIC_ALTER_*, the result in describe
// (text and --json), and one error line with exit status 1 for an unknown
// key (also on create), a missing topic, a min ISR above the RF and
// segment.bytes; 2 for a usage error.
func TestTopicAlterConfig(t *testing.T) {
	bs := "--bootstrap=" + startOneNode(t)
	run := func(args ...string) (string, string, int) {
		t.Helper()
		return runClientCLI(t, nil, append(args, bs, "--timeout", "20s")...)
	}
	_, errOut, code := run("topic", "create", "t", "--replication-factor", "1", "--min-insync-replicas", "1", "--config", "foo=bar")
	oneErrorLine(t, "create with an unknown key", code, errOut, 1, "Unknown topic config name: foo")
	if out, errOut, code := run("topic", "create", "t", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	out, errOut, code := run("topic", "alter-config", "t", "--set", "retention.ms=1000", "--set", "unclean.leader.election.enable=true")
	if code != 0 || out != "altered configs of topic t\n" {
		t.Fatalf("alter, flags after the name: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run("topic", "alter-config", "--delete", "retention.ms", "t"); code != 0 {
		t.Fatalf("alter, flag before the name: %d %q %q", code, out, errOut)
	}
	t.Setenv("PAYMENTLOG_TOPIC_ALTER_SET", "retention.bytes=5,000")
	_, errOut, code = run("topic", "alter-config", "t")
	oneErrorLine(t, "PAYMENTLOG_TOPIC_ALTER_SET with a bad value", code, errOut, 1, "retention.bytes")
	t.Setenv("PAYMENTLOG_TOPIC_ALTER_SET", "retention.bytes=5000")
	if out, errOut, code := run("topic", "alter-config", "t"); code != 0 {
		t.Fatalf("alter from PAYMENTLOG_TOPIC_ALTER_SET: %d %q %q", code, out, errOut)
	}
	os.Unsetenv("PAYMENTLOG_TOPIC_ALTER_SET") // restored by t.Setenv's cleanup

	out, _, code = run("topic", "describe", "t")
	if code != 0 || !strings.Contains(out, "Min ISR: 1") ||
		!strings.Contains(out, "Configs: retention.bytes=5000, unclean.leader.election.enable=true\n") {
		t.Fatalf("describe: %d %q", code, out)
	}
	out, _, code = run("topic", "describe", "t", "--json")
	var d struct {
		MinISR  int32             `json:"min_insync_replicas"`
		Configs map[string]string `json:"configs"`
	}
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || d.MinISR != 1 || len(d.Configs) != 2 ||
		d.Configs["retention.bytes"] != "5000" {
		t.Fatalf("describe --json: %d %v %q", code, err, out)
	}

	_, errOut, code = run("topic", "alter-config", "t", "--set", "foo=bar")
	oneErrorLine(t, "alter an unknown key", code, errOut, 1, "Unknown topic config name: foo")
	_, errOut, code = run("topic", "alter-config", "t", "--delete", "foo")
	oneErrorLine(t, "delete an unknown key", code, errOut, 1, "Unknown topic config name: foo")
	_, errOut, code = run("topic", "alter-config", "t", "--set", "min.insync.replicas=2")
	oneErrorLine(t, "min ISR above the RF", code, errOut, 1, "exceeds the replication factor 1")
	_, errOut, code = run("topic", "alter-config", "t", "--set", "segment.bytes=2097152")
	oneErrorLine(t, "segment.bytes", code, errOut, 1, "segment.bytes cannot be changed")
	_, errOut, code = run("topic", "alter-config", "nosuch", "--set", "retention.ms=1")
	oneErrorLine(t, "missing topic", code, errOut, 1, "topic nosuch does not exist")
	_, errOut, code = run("topic", "alter-config", "t")
	oneErrorLine(t, "nothing to change", code, errOut, 2, "nothing to change")
	_, errOut, code = run("topic", "alter-config", "t", "--set", "retention.ms")
	oneErrorLine(t, "--set without =", code, errOut, 2, "is not key=value")
	_, errOut, code = run("topic", "alter-config", "--set", "retention.ms=1")
	oneErrorLine(t, "no topic name", code, errOut, 2, "missing topic name")

	// Deleting returns a key to its default: describe no longer lists it.
	if out, errOut, code := run("topic", "alter-config", "t", "--delete", "retention.bytes", "--delete", "unclean.leader.election.enable"); code != 0 {
		t.Fatalf("delete: %d %q %q", code, out, errOut)
	}
	if out, _, _ = run("topic", "describe", "t"); !strings.Contains(out, "Configs: (none set: defaults)\n") {
		t.Fatalf("describe after deleting: %q", out)
	}
}
