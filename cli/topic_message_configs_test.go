package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// The message configs end to end against a real node: bad values refused
// naming the key; on a LogAppendTime topic produce --json prints each
// record's log_append_time and consume --json shows it as the timestamp,
// with "timestamp_type":"LogAppendTime";
// max.message.bytes refuses a line too large for a batch by name, after
// the lines before it were written.
func TestTopicMessageConfigs(t *testing.T) {
	run := oneNodeRunner(t)
	create := []string{"topic", "create", "events", "--partitions", "1", "--replication-factor", "1", "--min-insync-replicas", "1"}
	_, errOut, code := run("", append(create, "--config", "message.timestamp.type=logappendtime")...)
	oneErrorLine(t, "create with a bad message.timestamp.type", code, errOut, 1, "message.timestamp.type: want CreateTime or LogAppendTime")
	_, errOut, code = run("", append(create, "--config", "max.message.bytes=100")...)
	oneErrorLine(t, "create with a tiny max.message.bytes", code, errOut, 1, "max.message.bytes: want an integer from 128")
	if out, errOut, code := run("", append(create, "--config", "message.timestamp.type=LogAppendTime",
		"--config", "max.message.bytes=1024")...); code != 0 {
		t.Fatalf("create: %d %q %q", code, out, errOut)
	}
	_, errOut, code = run("", "topic", "alter-config", "events", "--set", "message.timestamp.after.max.ms=-1")
	oneErrorLine(t, "alter-config with a negative bound", code, errOut, 1, "message.timestamp.after.max.ms: want an integer >= 0")

	out, errOut, code := run("a\nb\n", "produce", "events", "--json")
	if code != 0 {
		t.Fatalf("produce: %d %q %q", code, out, errOut)
	}
	type ack struct {
		Partition     int32 `json:"partition"`
		Offset        int64 `json:"offset"`
		LogAppendTime int64 `json:"log_append_time"`
	}
	var acks []ack
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var a ack
		if err := json.Unmarshal([]byte(line), &a); err != nil || a.LogAppendTime <= 0 {
			t.Fatalf("produce --json line %q: %v", line, err)
		}
		acks = append(acks, a)
	}
	out, errOut, code = run("", "consume", "events", "--exit-at-end", "--json")
	if code != 0 {
		t.Fatalf("consume: %d %q %q", code, out, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || len(acks) != 2 {
		t.Fatalf("consumed %q after acks %+v", out, acks)
	}
	for i, line := range lines {
		var m struct {
			Offset        int64  `json:"offset"`
			Timestamp     int64  `json:"timestamp"`
			TimestampType string `json:"timestamp_type"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil || m.Offset != acks[i].Offset || m.Timestamp != acks[i].LogAppendTime ||
			m.TimestampType != "LogAppendTime" {
			t.Fatalf("consumed %q (%v), want offset %d at %d", line, err, acks[i].Offset, acks[i].LogAppendTime)
		}
	}

	_, errOut, code = run("c\n"+strings.Repeat("x", 2000)+"\n", "produce", "events")
	if code == 0 || !strings.Contains(errOut, "(1024: its max.message.bytes") {
		t.Fatalf("a line over max.message.bytes: exit %d, %q", code, errOut)
	}
}
