package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// groupTopic makes topic t on a fake cluster: 6 records on partition 0 (p0-0
// to p0-5) and 4 on partition 1, each partition's in one produce.
func groupTopic(t *testing.T) *clienttest.Cluster {
	t.Helper()
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 2)
	for p, n := range []int{6, 4} {
		var in strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&in, "p%d-%d\n", p, i)
		}
		if _, errOut, code := runClientCLI(t, strings.NewReader(in.String()), "produce", "t", "--partition", fmt.Sprint(p), "--bootstrap", fc.Bootstrap()); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	return fc
}

// consumeLines runs consume --json with args and returns the records
// printed; it fails the test unless the exit status is 0.
func consumeLines(t *testing.T, fc *clienttest.Cluster, args ...string) []consumedLine {
	t.Helper()
	out, errOut, code := runClientCLI(t, nil, append([]string{"consume", "t", "--json", "--max-wait", "50ms", "--bootstrap", fc.Bootstrap()}, args...)...)
	if code != 0 {
		t.Fatalf("consume %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return parseConsumed(t, out)
}

// checkOnce checks that runs, in order, read each partition's records from
// offset 0 on with no gap and no repeat, want records in all.
func checkOnce(t *testing.T, want int, runs ...[]consumedLine) {
	t.Helper()
	next := map[int32]int64{}
	n := 0
	for i, run := range runs {
		for _, l := range run {
			if l.Offset != next[l.Partition] || l.Value != fmt.Sprintf("p%d-%d", l.Partition, l.Offset) {
				t.Fatalf("run %d printed partition %d offset %d (%q); want offset %d", i+1, l.Partition, l.Offset, l.Value, next[l.Partition])
			}
			next[l.Partition]++
			n++
		}
	}
	if n != want {
		t.Fatalf("%d records read in all; want %d", n, want)
	}
}

func describeGroupJSON(t *testing.T, fc *clienttest.Cluster, group string) groupDescribeJSON {
	t.Helper()
	out, errOut, code := runClientCLI(t, nil, "group", "describe", group, "--json", "--bootstrap", fc.Bootstrap())
	var d groupDescribeJSON
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil {
		t.Fatalf("group describe --json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	return d
}

// consume --group twice with --max 4 reads the first 4 records and then the
// next 4, although --max stops in the middle of what a fetch returned: what
// is committed is the offset after the last record printed. A third run
// with --exit-at-end reads the last 2. describe shows the lag in between.
func TestConsumeGroupResumesAfterTheLastRecordPrinted(t *testing.T) {
	fc := groupTopic(t)
	first := consumeLines(t, fc, "--group", "g", "--max", "4")
	second := consumeLines(t, fc, "--group", "g", "--max", "4")
	if len(first) != 4 || len(second) != 4 {
		t.Fatalf("printed %d then %d records; want 4 and 4", len(first), len(second))
	}
	d := describeGroupJSON(t, fc, "g")
	var lag int64
	for _, o := range d.Offsets {
		lag += o.Lag
		if o.LogEnd != []int64{6, 4}[o.Partition] || o.Committed+o.Lag != o.LogEnd || o.LastCommitMs <= 0 || o.Error != "" {
			t.Fatalf("describe: %+v", o)
		}
	}
	if len(d.Offsets) != 2 || lag != 2 {
		t.Fatalf("describe after 8 of 10 records: %+v; want a lag of 2 in all", d)
	}
	out, errOut, code := runClientCLI(t, nil, "group", "describe", "g", "--bootstrap", fc.Bootstrap())
	if code != 0 || !strings.HasPrefix(out, "TOPIC  PARTITION  COMMITTED  LOG END  LAG  LAST COMMIT") ||
		strings.Count(out, "\nt  ") != 2 || !strings.Contains(out, fmt.Sprintf("  %d ", d.Offsets[0].Lag)) {
		t.Fatalf("group describe: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	third := consumeLines(t, fc, "--group", "g", "--exit-at-end")
	checkOnce(t, 10, first, second, third)
	if rest := consumeLines(t, fc, "--group", "g", "--exit-at-end"); len(rest) != 0 {
		t.Fatalf("a fourth run printed %+v", rest)
	}
	for _, o := range describeGroupJSON(t, fc, "g").Offsets {
		if o.Lag != 0 {
			t.Fatalf("after reading everything: %+v", o)
		}
	}
}

// --from is the fallback: partitions the group has no offset for start
// there, and the position they start at is committed even when nothing is
// printed, so the records produced before the next run are read then.
// Partitions with an offset start at it whatever --from says.
func TestConsumeGroupFromIsTheFallback(t *testing.T) {
	fc := groupTopic(t)
	if got := consumeLines(t, fc, "--group", "g", "--from", "end", "--exit-at-end"); len(got) != 0 {
		t.Fatalf("--from end printed %+v", got)
	}
	if _, errOut, code := runClientCLI(t, strings.NewReader("p1-4\n"), "produce", "t", "--partition", "1", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	got := consumeLines(t, fc, "--group", "g", "--from", "beginning", "--exit-at-end")
	if len(got) != 1 || got[0].Partition != 1 || got[0].Offset != 4 {
		t.Fatalf("printed %+v; want only partition 1's record at offset 4", got)
	}
}

// group list, set-offsets (--to earliest rewinds: the next consume reads
// everything again; an offset or latest for one partition) and delete.
func TestGroupListSetOffsetsDelete(t *testing.T) {
	fc := groupTopic(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	out, errOut, code := runClientCLI(t, nil, "group", "list", bs)
	if code != 0 || out != "GROUP  MEMBERS  PARTITIONS  LAST COMMIT\n" {
		t.Fatalf("group list with no groups: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	checkOnce(t, 10, consumeLines(t, fc, "--group", "g", "--exit-at-end"))
	consumeLines(t, fc, "--group", "other", "--partition", "1", "--max", "1")
	out, errOut, code = runClientCLI(t, nil, "group", "list", bs)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[1], "g      0        2           20") || !strings.HasPrefix(lines[2], "other  0        1           20") {
		t.Fatalf("group list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, _, code = runClientCLI(t, nil, "group", "list", "--json", bs)
	var list []groupListJSON
	if err := json.Unmarshal([]byte(out), &list); code != 0 || err != nil || len(list) != 2 || list[0].Group != "g" ||
		list[0].Partitions != 2 || list[1].Partitions != 1 || list[0].LastCommitMs <= 0 || !strings.HasSuffix(list[0].LastCommit, "Z") {
		t.Fatalf("group list --json: exit %d, %v, %q", code, err, out)
	}

	out, errOut, code = runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "earliest", "--execute", bs)
	if code != 0 || out != "TOPIC  PARTITION  BEFORE  OFFSET\nt      0          6       0\nt      1          4       0\n" {
		t.Fatalf("set-offsets --to earliest: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	checkOnce(t, 10, consumeLines(t, fc, "--group", "g", "--exit-at-end"))

	if _, errOut, code := runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "3", "--partition", "0", "--execute", bs); code != 0 {
		t.Fatalf("set-offsets --to 3: %s", errOut)
	}
	if _, errOut, code := runClientCLI(t, nil, "group", "set-offsets", "new", "t", "--to", "latest", "--partition", "1", "--execute", bs); code != 0 {
		t.Fatalf("set-offsets of a new group: %s", errOut)
	}
	if offs := fc.GroupOffsets("g"); len(offs) != 2 || offs[0].Offset != 3 || offs[1].Offset != 4 {
		t.Fatalf("after set-offsets --to 3 --partition 0: %+v", offs)
	}
	if offs := fc.GroupOffsets("new"); len(offs) != 1 || offs[0].Partition != 1 || offs[0].Offset != 4 {
		t.Fatalf("new group after set-offsets --to latest --partition 1: %+v", offs)
	}
	_, errOut, code = runClientCLI(t, nil, "group", "set-offsets", "g", "t", "--to", "7", "--partition", "1", "--execute", bs)
	oneErrorLine(t, "set-offsets past the end", code, errOut, 1, "partition 1 has offsets 0 to 4; 7 is outside them")

	out, errOut, code = runClientCLI(t, nil, "group", "delete", "g", bs)
	if code != 0 || out != "deleted group g\n" {
		t.Fatalf("group delete: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	_, errOut, code = runClientCLI(t, nil, "group", "delete", "g", bs)
	oneErrorLine(t, "delete again", code, errOut, 1, "group g does not exist")
	_, errOut, code = runClientCLI(t, nil, "group", "describe", "g", bs)
	oneErrorLine(t, "describe a deleted group", code, errOut, 1, "group g has no committed offsets and no members")
}

// Bad input is a usage error (exit 2, one line); a bad group name is the
// cluster's refusal (exit 1).
func TestGroupUsageErrors(t *testing.T) {
	fc := groupTopic(t)
	bs := "--bootstrap=" + fc.Bootstrap()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "describe"}, "missing group name"},
		{[]string{"group", "delete"}, "missing group name"},
		{[]string{"group", "list", "x"}, "takes no arguments"},
		{[]string{"group", "set-offsets"}, "missing group name and topic"},
		{[]string{"group", "set-offsets", "g"}, "missing topic"},
		{[]string{"group", "set-offsets", "g", "t"}, "--to earliest|latest|OFFSET|TIME is required"},
		{[]string{"group", "set-offsets", "g", "t", "--to", "soon"}, `--to: "soon" is not earliest, latest`},
		{[]string{"group", "set-offsets", "g", "t", "u", "--to", "latest"}, "expected a group name and a topic, got 3 arguments"},
		{[]string{"consume", "t", "--group", ""}, "--group: the group name is empty"},
		{[]string{"consume", "t", "--group", "g", "--commit-interval", "-1s"}, "--commit-interval must be >= 0"},
	} {
		_, errOut, code := runClientCLI(t, nil, append(c.args, bs)...)
		oneErrorLine(t, strings.Join(c.args, " "), code, errOut, 2, c.want)
	}
	_, errOut, code := runClientCLI(t, nil, "group", "bogus")
	oneErrorLine(t, "group bogus", code, errOut, 2, `unknown command "bogus"`)
	_, errOut, code = runClientCLI(t, nil, "consume", "t", "--group", "a b", "--max", "1", bs)
	oneErrorLine(t, "consume with a bad group name", code, errOut, 1, `Group: group name "a b": only letters`)
	_, errOut, code = runClientCLI(t, nil, "consume", "t", "--group", "a b", "--partition", "0", "--max", "1", bs)
	oneErrorLine(t, "consume --partition with a bad group name", code, errOut, 1, "InvalidGroupID")
}

// consume --group commits every --commit-interval while it follows the
// topic, and once more when interrupted (exit 0); with --commit-interval 0
// only then.
func TestConsumeGroupCommitsPeriodicallyAndWhenInterrupted(t *testing.T) {
	fc := groupTopic(t)
	committed := func(group string) int64 {
		var n int64
		for _, o := range fc.GroupOffsets(group) {
			n += o.Offset
		}
		return n
	}
	for _, c := range []struct {
		group, interval string
	}{{"periodic", "20ms"}, {"at-exit", "0"}} {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb lockedBuffer
		done := make(chan int, 1)
		go func() {
			done <- runWithInput(ctx, []string{"paymentlog", "consume", "t", "--group", c.group, "--commit-interval", c.interval,
				"--max-wait", "20ms", "--bootstrap", fc.Bootstrap()}, strings.NewReader(""), &out, &errb)
		}()
		deadline := time.Now().Add(15 * time.Second)
		for strings.Count(out.String(), "\n") < 10 || (c.interval != "0" && committed(c.group) < 10) {
			if time.Now().After(deadline) {
				cancel()
				t.Fatalf("--commit-interval %s: printed %q, committed %d in all, after 15 s; stderr %q", c.interval, out.String(), committed(c.group), errb.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
		if c.interval == "0" && fc.GroupOffsets(c.group) != nil {
			t.Fatalf("--commit-interval 0 committed before exiting: %+v", fc.GroupOffsets(c.group))
		}
		cancel()
		if code := <-done; code != 0 || committed(c.group) != 10 {
			t.Fatalf("--commit-interval %s: exit %d after the interrupt, %d committed in all, stderr %q", c.interval, code, committed(c.group), errb.String())
		}
	}
}

// A commit refused at exit makes the exit status 1, with the records
// printed; a periodic one refused is reported on stderr and consume goes
// on.
func TestConsumeGroupCommitFailure(t *testing.T) {
	fc := groupTopic(t)
	fc.SetIntercept(func(_ string, ft quic.FrameType, _ any) clienttest.Action {
		if ft == wire.TypeOffsetCommit {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.InvalidRequest}
		}
		return clienttest.Action{}
	})
	out, errOut, code := runClientCLI(t, nil, "consume", "t", "--group", "g", "--partition", "0", "--max", "2", "--bootstrap", fc.Bootstrap())
	if code != 1 || out != "p0-0\np0-1\n" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "commit offsets of group g: InvalidRequest") {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the 2 records and the commit's failure with exit 1", code, out, errOut)
	}
}

// A group that resumes after an unclean election truncated its partition
// below the committed offset is stopped (the committed leader epoch tells),
// with the ways on: --on-truncation rewind, or group set-offsets.
func TestConsumeGroupAfterLogTruncation(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 1)
	bs := "--bootstrap=" + fc.Bootstrap()
	for _, in := range []string{"a\n", "b\nc\n"} {
		if _, errOut, code := runClientCLI(t, strings.NewReader(in), "produce", "payments", bs); code != 0 {
			t.Fatalf("produce: %s", errOut)
		}
	}
	if out, errOut, code := runClientCLI(t, nil, "consume", "payments", "--group", "g", "--exit-at-end", bs); code != 0 || out != "a\nb\nc\n" {
		t.Fatalf("consume: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	unclean(t, fc, "payments")
	if _, errOut, code := runClientCLI(t, strings.NewReader("x\ny\nz\nw\n"), "produce", "payments", bs); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	out, errOut, code := runClientCLI(t, nil, "consume", "payments", "--group", "g", "--max", "1", bs)
	if out != "" {
		t.Fatalf("printed %q as if it followed c", out)
	}
	oneErrorLine(t, "consume after the truncation", code, errOut, 1,
		"records of group g from offset 1 up to its position 3 (rerun with --on-truncation rewind, or move the group with group set-offsets g payments --partition 0 --to 1 --execute)")
	out, errOut, code = runClientCLI(t, nil, "consume", "payments", "--group", "g", "--on-truncation", "rewind", "--exit-at-end", bs)
	if code != 0 || out != "x\ny\nz\nw\n" {
		t.Fatalf("--on-truncation rewind: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if offs := fc.GroupOffsets("g"); len(offs) != 1 || offs[0].Offset != 5 || offs[0].LeaderEpoch != 1 {
		t.Fatalf("committed %+v; want 5 in leader epoch 1", offs)
	}
}
