package cli

import (
	"strings"
	"testing"
)

// topic delete-records against a real node: the records below the offset
// go (consume from the beginning starts there), latest takes every
// partition to its high watermark, and bad requests get one error line:
// exit 1 from the node (an offset past the high watermark, a compacted
// topic), 2 for usage.
func TestTopicDeleteRecords(t *testing.T) {
	run := oneNodeRunner(t)
	if out, errOut, code := run("", "topic", "create", "audit", "--partitions", "2", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	lines := strings.Repeat("login\n", 10)
	if out, errOut, code := run(lines, "produce", "audit", "--partition", "0"); code != 0 {
		t.Fatalf("produce: %d %q %q", code, out, errOut)
	}
	if out, errOut, code := run(lines, "produce", "audit", "--partition", "1"); code != 0 {
		t.Fatalf("produce: %d %q %q", code, out, errOut)
	}
	// Flags after the topic name, as the contract says they may be.
	out, errOut, code := run("", "topic", "delete-records", "audit", "--partition", "0", "--offset", "4")
	if code != 0 || out != "audit:0: log start 4 on 1 of 1 in-sync replicas\n" {
		t.Fatalf("delete-records below 4: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run("", "consume", "audit", "--partition", "0", "--from", "beginning", "--exit-at-end", "--json")
	if code != 0 || strings.Count(out, "\n") != 6 || !strings.HasPrefix(out, `{"partition":0,"offset":4,`) {
		t.Fatalf("consume after: %d %q %q", code, out, errOut)
	}
	_, errOut, code = run("", "topic", "delete-records", "audit", "--partition", "0", "--offset", "11")
	oneErrorLine(t, "past the high watermark", code, errOut, 1, "OffsetOutOfRange")
	out, errOut, code = run("", "topic", "delete-records", "audit", "--offset", "latest", "--wait", "0")
	if code != 0 || out != "audit:0: log start 10\naudit:1: log start 10\n" {
		t.Fatalf("delete-records latest: %d %q %q", code, out, errOut)
	}
	_, errOut, code = run("", "topic", "delete-records", "audit", "--offset", "3")
	oneErrorLine(t, "an offset without --partition", code, errOut, 2, "needs --partition")
	_, errOut, code = run("", "topic", "delete-records", "audit", "--partition", "0", "--offset", "soon")
	oneErrorLine(t, "a bad offset", code, errOut, 2, "--offset")

	if out, errOut, code := run("", "topic", "create", "accounts", "--partitions", "1", "--replication-factor", "1",
		"--min-insync-replicas", "1", "--config", "cleanup.policy=compact"); code != 0 {
		t.Fatalf("create accounts: %d %q %q", code, out, errOut)
	}
	_, errOut, code = run("", "topic", "delete-records", "accounts", "--offset", "latest")
	oneErrorLine(t, "a compacted topic", code, errOut, 1, "PolicyViolation")
}
