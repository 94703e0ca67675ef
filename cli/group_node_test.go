package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// Consumer groups against a real node, whose controller keeps the offsets
// in the metadata log: consume --group twice with --max reads the first
// records and then the next ones, describe shows the lag, set-offsets
// --to earliest rewinds, delete removes the group.
func TestGroupsOnANode(t *testing.T) {
	bs := "--bootstrap=" + startOneNode(t)
	run := func(stdin string, args ...string) (string, string, int) {
		t.Helper()
		return runClientCLI(t, strings.NewReader(stdin), append(args, bs)...)
	}
	if _, errOut, code := run("", "topic", "create", "t", "--partitions", "2", "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
		t.Fatalf("topic create: %s", errOut)
	}
	for p, n := range []int{6, 4} {
		var in strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&in, "p%d-%d\n", p, i)
		}
		if _, errOut, code := run(in.String(), "produce", "t", "--partition", fmt.Sprint(p)); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	consume := func(args ...string) []consumedLine {
		t.Helper()
		out, errOut, code := run("", append([]string{"consume", "t", "--json", "--max-wait", "50ms", "--group", "g"}, args...)...)
		if code != 0 {
			t.Fatalf("consume %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
		}
		return parseConsumed(t, out)
	}
	first, second := consume("--max", "4"), consume("--max", "4")
	if len(first) != 4 || len(second) != 4 {
		t.Fatalf("printed %d then %d records; want 4 and 4", len(first), len(second))
	}

	out, errOut, code := run("", "group", "describe", "g", "--json")
	var d groupDescribeJSON
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || len(d.Offsets) != 2 {
		t.Fatalf("group describe --json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	var lag int64
	for _, o := range d.Offsets {
		lag += o.Lag
		if o.LogEnd != []int64{6, 4}[o.Partition] || o.Committed+o.Lag != o.LogEnd || o.LastCommitMs <= 0 {
			t.Fatalf("describe: %+v", o)
		}
	}
	if lag != 2 {
		t.Fatalf("describe after 8 of 10 records: %+v; want a lag of 2 in all", d)
	}
	checkOnce(t, 10, first, second, consume("--exit-at-end"))

	out, errOut, code = run("", "group", "list")
	if code != 0 || !strings.Contains(out, "\ng  ") {
		t.Fatalf("group list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code := run("", "group", "set-offsets", "g", "t", "--to", "earliest", "--execute"); code != 0 {
		t.Fatalf("set-offsets --to earliest: %s", errOut)
	}
	checkOnce(t, 10, consume("--exit-at-end"))

	if out, errOut, code := run("", "group", "delete", "g"); code != 0 || out != "deleted group g\n" {
		t.Fatalf("group delete: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = run("", "group", "delete", "g")
	oneErrorLine(t, "delete again", code, errOut, 1, "group g does not exist")
	_, errOut, code = run("", "group", "describe", "g")
	oneErrorLine(t, "describe a deleted group", code, errOut, 1, "group g has no committed offsets")
}
