package cli

import (
	"strings"
	"testing"
	"time"
)

// oneNodeRunner starts a node and returns a runner of client commands
// against it: stdin, the arguments, then stdout, stderr and the exit
// status; admin commands get a 20 s --timeout.
func oneNodeRunner(t *testing.T) func(stdin string, args ...string) (string, string, int) {
	bs := "--bootstrap=" + startOneNode(t)
	return func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		if args[0] != "produce" && args[0] != "consume" {
			args = append(args, "--timeout", "20s")
		}
		return runClientCLI(t, strings.NewReader(stdin), append(args, bs)...)
	}
}

// A compacted topic end to end against a real node: created with
// cleanup.policy and a compaction knob (--config takes a value with a comma
// whole), shown by describe, bad values refused naming the key on create
// and alter-config; its leader refuses a record without a key
// (InvalidRecord) and takes keyed ones; altered back to delete, it takes
// keyless records again once the node has applied the change.
func TestTopicCompactionConfigs(t *testing.T) {
	run := oneNodeRunner(t)
	create := []string{"topic", "create", "ledger", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"}
	_, errOut, code := run("", append(create, "--config", "cleanup.policy=compact, delete")...)
	oneErrorLine(t, "create with a bad cleanup.policy", code, errOut, 1, "cleanup.policy")
	_, errOut, code = run("", append(create, "--config", "min.compaction.lag.ms=-1")...)
	oneErrorLine(t, "create with a negative min.compaction.lag.ms", code, errOut, 1, "min.compaction.lag.ms")
	_, errOut, code = run("", append(create, "--config", "max.compaction.lag.ms=0")...)
	oneErrorLine(t, "create with max.compaction.lag.ms 0", code, errOut, 1, "max.compaction.lag.ms: want an integer >= 1")
	if out, errOut, code := run("", append(create, "--config", "cleanup.policy=compact,delete",
		"--config", "min.cleanable.dirty.ratio=0.2")...); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	out, _, code := run("", "topic", "describe", "ledger")
	if code != 0 || !strings.Contains(out, "Configs: cleanup.policy=compact,delete, min.cleanable.dirty.ratio=0.2\n") {
		t.Fatalf("describe: %d %q", code, out)
	}

	_, errOut, code = run("no key\n", "produce", "ledger")
	oneErrorLine(t, "keyless record", code, errOut, 1, "InvalidRecord: compacted topic ledger cannot accept a record without a key")
	if out, errOut, code := run("k1:v1\nk2:v2\n", "produce", "ledger", "--key-delimiter", ":"); code != 0 {
		t.Fatalf("keyed records: %d %q %q", code, out, errOut)
	}
	// --null-value sends a tombstone; consume --json prints its value as
	// null (an empty value stays "").
	if out, errOut, code := run("k1:DEL\nk3:\n", "produce", "ledger", "--key-delimiter", ":", "--null-value", "DEL"); code != 0 {
		t.Fatalf("tombstone: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("", "consume", "ledger", "--exit-at-end", "--json")
	if code != 0 || !strings.Contains(out, `"offset":2,"key":"k1","value":null,`) || !strings.Contains(out, `"offset":3,"key":"k3","value":"",`) {
		t.Fatalf("consume: %d %q %q", code, out, errOut)
	}

	_, errOut, code = run("", "topic", "alter-config", "ledger", "--set", "min.cleanable.dirty.ratio=1.5")
	oneErrorLine(t, "alter to a ratio above 1", code, errOut, 1, "min.cleanable.dirty.ratio")
	_, errOut, code = run("", "topic", "alter-config", "ledger", "--set", "delete.retention.ms=soon")
	oneErrorLine(t, "alter to a bad delete.retention.ms", code, errOut, 1, "delete.retention.ms")
	if out, errOut, code := run("", "topic", "alter-config", "ledger", "--set", "cleanup.policy=delete",
		"--set", "delete.retention.ms=0", "--delete", "min.cleanable.dirty.ratio"); code != 0 {
		t.Fatalf("alter: %d %q %q", code, out, errOut)
	}
	out, _, code = run("", "topic", "describe", "ledger")
	if code != 0 || !strings.Contains(out, "Configs: cleanup.policy=delete, delete.retention.ms=0\n") {
		t.Fatalf("describe after alter: %d %q", code, out)
	}
	// The node applies the change from its metadata log soon after the
	// controller commits it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, errOut, code := run("no key\n", "produce", "ledger")
		if code == 0 {
			break
		}
		if !strings.Contains(errOut, "InvalidRecord") || time.Now().After(deadline) {
			t.Fatalf("keyless record after cleanup.policy=delete: exit %d, %q", code, errOut)
		}
	}
}
