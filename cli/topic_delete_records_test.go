package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"paymentlog/client"
	"paymentlog/node/metadata"
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

// delete-records --offset-json-file (Kafka's file) deletes in every topic
// and partition it lists (-1: the high watermark), also from stdin; a topic
// that fails does not stop the others, and the one error line names every
// failure; a bad file is a usage error naming what is wrong.
func TestTopicDeleteRecordsFromFile(t *testing.T) {
	run := oneNodeRunner(t)
	for _, tp := range []struct {
		name  string
		parts string
	}{{"audit", "2"}, {"refunds", "1"}} {
		if out, errOut, code := run("", "topic", "create", tp.name, "--partitions", tp.parts, "--replication-factor", "1", "--min-insync-replicas", "1"); code != 0 {
			t.Fatalf("create %s: %d %q %q", tp.name, code, out, errOut)
		}
	}
	lines := strings.Repeat("x\n", 10)
	for _, tp := range [][]string{{"audit", "0"}, {"audit", "1"}, {"refunds", "0"}} {
		if out, errOut, code := run(lines, "produce", tp[0], "--partition", tp[1]); code != 0 {
			t.Fatalf("produce: %d %q %q", code, out, errOut)
		}
	}
	file := filepath.Join(t.TempDir(), "delete.json")
	if err := os.WriteFile(file, []byte(`{"version": 1, "partitions": [
		{"topic": "refunds", "partition": 0, "offset": 5},
		{"topic": "audit", "partition": 1, "offset": -1},
		{"topic": "audit", "partition": 0, "offset": 3}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run("", "topic", "delete-records", "--offset-json-file", file)
	if code != 0 || out != "audit:0: log start 3 on 1 of 1 in-sync replicas\naudit:1: log start 10 on 1 of 1 in-sync replicas\n"+
		"refunds:0: log start 5 on 1 of 1 in-sync replicas\n" {
		t.Fatalf("--offset-json-file: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run(`{"version":1,"partitions":[{"topic":"audit","partition":0,"offset":4}]}`, "topic", "delete-records", "--offset-json-file", "-", "--wait", "0")
	if code != 0 || out != "audit:0: log start 4\n" {
		t.Fatalf("--offset-json-file -: %d %q %q", code, out, errOut)
	}
	// A missing topic or partition: nothing is deleted, the error names each.
	out, errOut, code = run(`{"version":1,"partitions":[{"topic":"nope","partition":0,"offset":1},{"topic":"refunds","partition":0,"offset":6},`+
		`{"topic":"audit","partition":2,"offset":1}]}`, "topic", "delete-records", "--offset-json-file", "-", "--wait", "0")
	if out != "" {
		t.Fatalf("with a missing topic: stdout %q", out)
	}
	oneErrorLine(t, "a missing topic", code, errOut, 1, "topic delete-records: nothing deleted: topic audit has 2 partitions; no partition 2; topic nope: ")
	if out, _, _ := run("", "topic", "offsets", "refunds", "--time", "earliest"); out != "refunds:0:5\n" {
		t.Fatalf("refunds after a refused file: %q", out)
	}
	// Topics that fail once sent do not stop the others.
	out, errOut, code = run(`{"version":1,"partitions":[{"topic":"audit","partition":1,"offset":99},{"topic":"refunds","partition":0,"offset":6}]}`,
		"topic", "delete-records", "--offset-json-file", "-", "--wait", "0")
	if out != "refunds:0: log start 6\n" {
		t.Fatalf("with a failing topic: stdout %q", out)
	}
	oneErrorLine(t, "a failing topic", code, errOut, 1, "topic delete-records audit: OffsetOutOfRange")
	_, errOut, code = run(`{"version":1,"partitions":[{"topic":"audit","partition":1,"offset":99},{"topic":"refunds","partition":0,"offset":99}]}`,
		"topic", "delete-records", "--offset-json-file", "-", "--wait", "0")
	oneErrorLine(t, "two failing topics", code, errOut, 1, "2 of 2 topics failed: topic delete-records audit: OffsetOutOfRange")

	for _, c := range []struct {
		args  []string
		stdin string
		want  string
	}{
		{[]string{"audit", "--offset-json-file", "-"}, "", "--offset-json-file names the topics: give no topic name (got audit)"},
		{[]string{"--offset-json-file", "-", "--offset", "3"}, "", "--offset and --partition do not go with --offset-json-file"},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"offsets":[]}`, `--offset-json-file -: json: unknown field "offsets"`},
		{[]string{"--offset-json-file", "-"}, `{"version":2,"partitions":[{"topic":"a","partition":0,"offset":1}]}`, "version 2; only version 1 is known"},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"partitions":[]}`, `"partitions" lists no partition`},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"partitions":[{"topic":"a","partition":0,"offset":-2}]}`, "partitions[0]: offset -2 is neither"},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"partitions":[{"topic":"a","partition":-1,"offset":0}]}`, "partitions[0]: partition -1 is negative"},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"partitions":[{"topic":"a b","partition":0,"offset":0}]}`, `partitions[0]: topic name "a b"`},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"partitions":[{"topic":"a","partition":0,"offset":0},{"topic":"a","partition":0,"offset":1}]}`, "partitions[1]: topic a partition 0 is listed twice"},
		{[]string{"--offset-json-file", "-"}, `{"version":1,"partitions":[{"topic":"a","partition":0,"offset":0}]} {}`, "more than one JSON value"},
		{[]string{"--offset-json-file", filepath.Join(t.TempDir(), "missing.json")}, "", "no such file or directory"},
	} {
		_, errOut, code := run(c.stdin, append([]string{"topic", "delete-records"}, c.args...)...)
		oneErrorLine(t, strings.Join(c.args, " "), code, errOut, 2, c.want)
	}
}

// FuzzParseDeleteRecordsFile: any bytes give topics or an error, never a
// panic; what is read holds valid names, partitions and offsets, each
// topic once, in name order.
func FuzzParseDeleteRecordsFile(f *testing.F) {
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"payments","partition":0,"offset":812},{"topic":"payments","partition":1,"offset":-1}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"b","partition":2,"offset":0},{"topic":"a","partition":0,"offset":1}]}`))
	f.Add([]byte(`{"version":1,"partitions":[{"topic":"a","partition":0,"offset":0},{"topic":"a","partition":0,"offset":1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		jobs, err := parseDeleteRecordsFile(data)
		if err != nil {
			return
		}
		if len(jobs) == 0 {
			t.Fatalf("no topics and no error from %q", data)
		}
		for i, j := range jobs {
			if metadata.ValidateTopicName(j.topic) != nil || len(j.offsets) == 0 || (i > 0 && jobs[i-1].topic >= j.topic) {
				t.Fatalf("topic %d %+v from %q", i, j, data)
			}
			for p, off := range j.offsets {
				if p < 0 || (off < 0 && off != client.DeleteRecordsLatest) {
					t.Fatalf("partition %d offset %d from %q", p, off, data)
				}
			}
		}
	})
}
