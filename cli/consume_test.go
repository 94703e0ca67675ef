package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

type consumedLine struct {
	Partition   int32   `json:"partition"`
	Offset      int64   `json:"offset"`
	Key         *string `json:"key"`
	Value       string  `json:"value"`
	Timestamp   int64   `json:"timestamp"`
	ValueBase64 string  `json:"value_base64"`
}

func parseConsumed(tb testing.TB, out string) []consumedLine {
	tb.Helper()
	var lines []consumedLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l consumedLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			tb.Fatalf("bad output line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestConsumeJSONExitAtEnd(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 3)
	var in strings.Builder
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	in.WriteString("\"quoted\"\\\t\x01\xff\n")
	if _, errOut, code := runClientCLI(t, strings.NewReader(in.String()), "produce", "payments", "--key-delimiter", ":", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "consume", "payments", "--from", "beginning", "--exit-at-end", "--json", "--bootstrap", fc.Bootstrap())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	lines := parseConsumed(t, out)
	if len(lines) != 301 {
		t.Fatalf("%d lines", len(lines))
	}
	seen := map[string]bool{}
	next := map[int32]int64{}
	for _, l := range lines {
		if l.Offset != next[l.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", l.Partition, l.Offset, next[l.Partition])
		}
		next[l.Partition]++
		if l.Timestamp == 0 {
			t.Fatal("no timestamp")
		}
		if l.Key == nil {
			if l.ValueBase64 == "" || !strings.HasPrefix(l.Value, "\"quoted\"\\\t\x01") {
				t.Fatalf("binary line: %+v", l)
			}
			continue
		}
		if "v"+strings.TrimPrefix(*l.Key, "k") != l.Value {
			t.Fatalf("key %q value %q", *l.Key, l.Value)
		}
		seen[l.Value] = true
	}
	if len(seen) != 300 {
		t.Fatalf("%d distinct values", len(seen))
	}
}

func TestConsumePartitionFromOffsetMax(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 2)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\nd\ne\n"), "produce", "t", "--partition", "1", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--partition", "1", "--from", "1", "--max", "3", "--bootstrap", fc.Bootstrap())
	if code != 0 || out != "b\nc\nd\n" {
		t.Fatalf("exit %d out %q err %q", code, out, errOut)
	}
	// --from end with --exit-at-end: nothing, at once.
	out, _, code = runClientCLI(t, nil, "consume", "t", "--from", "end", "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 0 || out != "" {
		t.Fatalf("from end: %d %q", code, out)
	}
	_, errOut, code = runClientCLI(t, nil, "consume", "t", "--partition", "1", "--from", "9", "--max", "1", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "outside") {
		t.Fatalf("out of range: %d %q", code, errOut)
	}
	_, errOut, code = runClientCLI(t, nil, "consume", "t", "--partition", "5", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "no partition 5") {
		t.Fatalf("bad partition: %d %q", code, errOut)
	}
	_, _, code = runClientCLI(t, nil, "consume", "t", "--from", "yesterday")
	if code != 2 {
		t.Fatalf("bad --from: exit %d", code)
	}
}

// Poll can return records together with an error: here one Fetch covers both
// partitions (same leader), partition 0 answers records from offset 9 and
// partition 1 (5 records) OffsetOutOfRange. The records are printed before
// the error is reported.
func TestConsumePrintsRecordsReturnedWithAnError(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 2)
	leader, _ := fc.Leader("t", 0)
	fc.SetLeader("t", 1, leader)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n"), "produce", "t", "--partition", "0", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\nd\ne\n"), "produce", "t", "--partition", "1", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", "9", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "partition 1") || !strings.Contains(errOut, "outside") {
		t.Fatalf("exit %d, stderr %q; want 1 and partition 1's offset out of range", code, errOut)
	}
	if out != "j\nk\nl\n" {
		t.Fatalf("stdout %q; want partition 0's records from offset 9", out)
	}
}

// --exit-at-end with --from past a partition's end is the out-of-range error
// consume reports without --exit-at-end, not a silent exit 0.
func TestConsumeExitAtEndFromPastEndFails(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\n"), "produce", "t", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--from", "9", "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 1 || out != "" || !strings.Contains(errOut, "partition 0") || !strings.Contains(errOut, "outside") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 1 and partition 0's offset out of range", code, out, errOut)
	}
	// At the end exactly: nothing to read, success.
	out, errOut, code = runClientCLI(t, nil, "consume", "t", "--from", "2", "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 0 || out != "" {
		t.Fatalf("from end offset: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runClientCLI(t, nil, "consume", "t", "--from", "1", "--exit-at-end", "--bootstrap", fc.Bootstrap())
	if code != 0 || out != "b\n" {
		t.Fatalf("from 1: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
