package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// topic offsets prints topic:partition:offset at the start, the end or a
// time ("none" where no record is stamped at or after it), or JSON.
func TestTopicOffsets(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 2)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\nc\n"), "produce", "t", "--partition", "1", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	cut := time.UnixMilli(time.Now().UnixMilli() + 1)
	for time.Now().Before(cut) {
		time.Sleep(100 * time.Microsecond) // the clock passing cut is the condition
	}
	if _, errOut, code := runClientCLI(t, strings.NewReader("d\n"), "produce", "t", "--partition", "1", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	for _, c := range []struct{ time, want string }{
		{"latest", "t:0:0\nt:1:4\n"},
		{"earliest", "t:0:0\nt:1:0\n"},
		{fmt.Sprintf("@%d", cut.UnixMilli()), "t:0:none\nt:1:3\n"},
		{cut.UTC().Format(time.RFC3339Nano), "t:0:none\nt:1:3\n"},
		{"@0", "t:0:none\nt:1:0\n"},
	} {
		out, errOut, code := runClientCLI(t, nil, "topic", "offsets", "t", "--time", c.time, "--bootstrap", fc.Bootstrap())
		if code != 0 || out != c.want {
			t.Errorf("--time %s: exit %d, stdout %q, stderr %q; want %q", c.time, code, out, errOut, c.want)
		}
	}
	out, errOut, code := runClientCLI(t, nil, "topic", "offsets", "t", "--json", "--bootstrap", fc.Bootstrap())
	var got topicOffsetsJSON
	if err := json.Unmarshal([]byte(out), &got); code != 0 || err != nil || got.Time != "latest" || len(got.Offsets) != 2 || got.Offsets[1].Offset != 4 {
		t.Fatalf("--json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	for _, bad := range []string{"5", "yesterday", "@-1"} {
		if _, errOut, code := runClientCLI(t, nil, "topic", "offsets", "t", "--time", bad, "--bootstrap", fc.Bootstrap()); code != 2 || !strings.Contains(errOut, "--time") {
			t.Errorf("--time %s: exit %d, stderr %q; want a usage error", bad, code, errOut)
		}
	}
	if _, errOut, code := runClientCLI(t, nil, "topic", "offsets", "nope", "--bootstrap", fc.Bootstrap()); code != 1 || !strings.Contains(errOut, "does not exist") {
		t.Errorf("unknown topic: exit %d, stderr %q", code, errOut)
	}
}

// A partition without a leader (every replica down) is reported
// unavailable after a bounded wait, beside the offsets of the others,
// instead of holding the whole answer until --timeout.
func TestTopicOffsetsWithAPartitionOffline(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 3)
	if _, errOut, code := runClientCLI(t, strings.NewReader("a\nb\n"), "produce", "t", "--partition", "2", "--bootstrap", fc.Bootstrap()); code != 0 {
		t.Fatalf("produce: %s", errOut)
	}
	fc.SetLeader("t", 1, -1)
	start := time.Now()
	out, errOut, code := runClientCLI(t, nil, "topic", "offsets", "t", "--timeout", "1m", "--bootstrap", fc.Bootstrap())
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %v: waited for --timeout", took)
	}
	if code != 1 || out != "t:0:0\nt:1:unavailable\nt:2:2\n" || !strings.Contains(errOut, "1 of 3 partitions unavailable") || !strings.Contains(errOut, "no leader") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	out, errOut, code = runClientCLI(t, nil, "topic", "offsets", "t", "--json", "--bootstrap", fc.Bootstrap())
	var got topicOffsetsJSON
	if err := json.Unmarshal([]byte(out), &got); code != 1 || err != nil || len(got.Offsets) != 3 {
		t.Fatalf("--json: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	if o := got.Offsets[1]; o.Partition != 1 || o.Offset != -1 || !strings.Contains(o.Error, "no leader") {
		t.Fatalf("--json partition 1: %+v", o)
	}
	if o := got.Offsets[2]; o.Offset != 2 || o.Error != "" {
		t.Fatalf("--json partition 2: %+v", o)
	}
	// A timeout shorter than the wait still ends the command with an error.
	if _, errOut, code := runClientCLI(t, nil, "topic", "offsets", "t", "--timeout", "200ms", "--bootstrap", fc.Bootstrap()); code != 1 || !strings.Contains(errOut, "deadline") {
		t.Fatalf("--timeout 200ms: exit %d, stderr %q", code, errOut)
	}
	// Back online: no error.
	fc.SetLeader("t", 1, 1)
	if out, errOut, code := runClientCLI(t, nil, "topic", "offsets", "t", "--bootstrap", fc.Bootstrap()); code != 0 || out != "t:0:0\nt:1:0\nt:2:2\n" {
		t.Fatalf("back online: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
