package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/client/clienttest"
	"paymentlog/wire"
)

type ackLine struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	Error     string `json:"error"`
}

func parseAcks(tb testing.TB, out string) []ackLine {
	tb.Helper()
	var acks []ackLine
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var a ackLine
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			tb.Fatalf("bad output line %q: %v", sc.Text(), err)
		}
		acks = append(acks, a)
	}
	return acks
}

func TestProduceJSONAcksInInputOrder(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("payments", 3)
	var in strings.Builder
	const n = 2000
	for i := 0; i < n; i++ {
		fmt.Fprintf(&in, "cust%d:payment %d\r\n", i%17, i)
	}
	out, errOut, code := runClientCLI(t, strings.NewReader(in.String()), "produce", "payments", "--key-delimiter", ":", "--json", "--bootstrap", fc.Bootstrap())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	acks := parseAcks(t, out)
	if len(acks) != n {
		t.Fatalf("%d ack lines for %d records", len(acks), n)
	}
	stored := map[int32][]clienttest.Stored{}
	for p := int32(0); p < 3; p++ {
		stored[p] = fc.Records("payments", p)
	}
	for i, a := range acks {
		key := fmt.Sprintf("cust%d", i%17)
		if want := client.KeyPartition([]byte(key), 3); a.Partition != want {
			t.Fatalf("line %d: partition %d, want %d", i, a.Partition, want)
		}
		s := stored[a.Partition][a.Offset]
		if string(s.Key) != key || string(s.Value) != fmt.Sprintf("payment %d", i) {
			t.Fatalf("line %d acked at %d/%d which holds %q=%q", i, a.Partition, a.Offset, s.Key, s.Value)
		}
	}
}

func TestProduceFixedKeyAndPartition(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 3)
	out, errOut, code := runClientCLI(t, strings.NewReader("a\nb\n\nlast-no-newline"), "produce", "t", "--key", "K", "--partition", "2", "--json", "--acks", "1", "--bootstrap", fc.Bootstrap())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	acks := parseAcks(t, out)
	if len(acks) != 4 {
		t.Fatalf("acks: %v", acks)
	}
	recs := fc.Records("t", 2)
	want := []string{"a", "b", "", "last-no-newline"}
	for i, r := range recs {
		if string(r.Key) != "K" || string(r.Value) != want[i] || acks[i].Partition != 2 || acks[i].Offset != int64(i) {
			t.Fatalf("record %d: %q=%q ack %+v", i, r.Key, r.Value, acks[i])
		}
	}
}

func TestProduceReportsUnacknowledged(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	fc.InterceptProduce(clienttest.Action{Kind: clienttest.Refuse, Code: wire.InvalidRequest})
	out, errOut, code := runClientCLI(t, strings.NewReader("x\ny\nz\n"), "produce", "t", "--json", "--bootstrap", fc.Bootstrap())
	if code == 0 {
		t.Fatal("exit 0 although nothing was acknowledged")
	}
	if !strings.Contains(errOut, "3 of 3 records were not acknowledged") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("stderr: %q", errOut)
	}
	for _, a := range parseAcks(t, out) {
		if a.Error == "" || a.Offset != -1 {
			t.Fatalf("failed record printed as %+v", a)
		}
	}
}

func TestProduceTooLongLineIsCountedNotLost(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	in := "ok1\n" + strings.Repeat("x", 5000) + "\nok2\n"
	out, errOut, code := runClientCLI(t, strings.NewReader(in), "produce", "t", "--json", "--max-record-bytes", "1000", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "1 of 3 records were not acknowledged") {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	acks := parseAcks(t, out)
	if len(acks) != 3 || acks[0].Offset != 0 || acks[1].Error == "" || acks[2].Offset != 1 {
		t.Fatalf("acks %+v", acks)
	}
}

func TestProduceUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"produce"},
		{"produce", "t", "--key", "a", "--key-delimiter", ":"},
		{"produce", "t", "--acks", "2"},
	} {
		_, errOut, code := runClientCLI(t, nil, args...)
		if code != 2 || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errOut)
		}
	}
	_, errOut, code := runClientCLI(t, nil, "produce", "t", "--compression", "gzip")
	oneErrorLine(t, "produce --compression gzip", code, errOut, 2, `--compression: unknown compression "gzip" (want none, lz4 or zstd)`)
}

func TestProduceUnknownTopicOrPartitionFailsBeforeReading(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 2)
	in := strings.NewReader(strings.Repeat("x\n", 100000))
	start := time.Now()
	_, errOut, code := runClientCLI(t, in, "produce", "nope", "--topic-wait", "300ms", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "does not exist") || time.Since(start) > 10*time.Second {
		t.Fatalf("exit %d after %v: %q", code, time.Since(start), errOut)
	}
	if in.Len() != 200000 {
		t.Fatalf("read %d bytes of input before failing", 200000-in.Len())
	}
	_, errOut, code = runClientCLI(t, strings.NewReader("x\n"), "produce", "t", "--partition", "2", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "no partition 2") {
		t.Fatalf("exit %d: %q", code, errOut)
	}
}

// A line over --max-record-bytes is refused with its own size, not the limit's.
func TestProduceTooLongLineReportsItsSize(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	in := strings.Repeat("x", 5000) + "\n" + strings.Repeat("y", 3<<20) + "\r\n" + strings.Repeat("z", 3<<20+7)
	out, errOut, code := runClientCLI(t, strings.NewReader(in), "produce", "t", "--json", "--max-record-bytes", "1000", "--bootstrap", fc.Bootstrap())
	if code != 1 || !strings.Contains(errOut, "3 of 3 records were not acknowledged (first: input line 1: client: record of 5000 bytes (key, value and headers) exceeds the 1000-byte limit)") {
		t.Fatalf("exit %d: %q", code, errOut)
	}
	acks := parseAcks(t, out)
	for i, want := range []string{"of 5000 bytes", fmt.Sprintf("of %d bytes", 3<<20), fmt.Sprintf("of %d bytes", 3<<20+7)} {
		if len(acks) != 3 || !strings.Contains(acks[i].Error, want) {
			t.Fatalf("acks %+v; want record %d refused as %q", acks, i, want)
		}
	}
}

// Without --json, the summary names the input line of the first record that
// was not acknowledged.
func TestProduceSummaryNamesFirstFailedLine(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	in := "ok1\nok2\n" + strings.Repeat("x", 500) + "\nok4\n" + strings.Repeat("y", 600) + "\n"
	out, errOut, code := runClientCLI(t, strings.NewReader(in), "produce", "t", "--max-record-bytes", "200", "--bootstrap", fc.Bootstrap())
	if code != 1 || out != "" || !strings.Contains(errOut, "2 of 5 records were not acknowledged (first: input line 3: client: record of 500 bytes") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// --max-record-bytes counts a record's key and value, exactly: a line of
// that many bytes is sent (the client used to count some 40 bytes of batch
// framing against it and refuse it), one byte more is refused with the
// line, its size and the limit named, and the lines after it are sent.
func TestProduceMaxRecordBytesCountsKeyAndValue(t *testing.T) {
	fc := startFakeCluster(t)
	fc.CreateTopic("t", 1)
	const limit = 1000
	for _, c := range []struct {
		name    string
		flags   []string
		ok, bad string // lines whose record is limit and limit+1 bytes
		wantErr string
	}{
		{"value", nil, strings.Repeat("v", limit), strings.Repeat("v", limit+1),
			"input line 2: client: record of 1001 bytes (key, value and headers) exceeds the 1000-byte limit"},
		{"value, CRLF", nil, strings.Repeat("v", limit) + "\r", strings.Repeat("v", limit+1) + "\r",
			"input line 2: client: record of 1001 bytes (key, value and headers) exceeds the 1000-byte limit"},
		{"--key", []string{"--key", "kkkk"}, strings.Repeat("v", limit-4), strings.Repeat("v", limit-3),
			"input line 2: client: record of 1001 bytes (key, value and headers) exceeds the 1000-byte limit"},
		{"--key-delimiter", []string{"--key-delimiter", "::"}, "kkkk::" + strings.Repeat("v", limit-4), "kkkk::" + strings.Repeat("v", limit-3),
			"input line 2: line of 1003 bytes: its key and value exceed the 1000-byte record limit"},
		{"--key-delimiter, line without it", []string{"--key-delimiter", "::"}, strings.Repeat("v", limit), strings.Repeat("v", limit+1),
			"input line 2: client: record of 1001 bytes (key, value and headers) exceeds the 1000-byte limit"},
	} {
		in := c.ok + "\n" + c.bad + "\nlast\n"
		args := append([]string{"produce", "t", "--json", "--max-record-bytes", fmt.Sprint(limit), "--bootstrap", fc.Bootstrap()}, c.flags...)
		out, errOut, code := runClientCLI(t, strings.NewReader(in), args...)
		if code != 1 || !strings.Contains(errOut, "1 of 3 records were not acknowledged (first: "+c.wantErr+")") {
			t.Errorf("%s: exit %d, stderr %q; want line 2 refused: %q", c.name, code, errOut, c.wantErr)
			continue
		}
		acks := parseAcks(t, out)
		if len(acks) != 3 || acks[0].Error != "" || acks[0].Offset < 0 || acks[1].Error == "" || acks[2].Error != "" || acks[2].Offset != acks[0].Offset+1 {
			t.Errorf("%s: acks %+v; want lines 1 and 3 acknowledged, line 2 refused", c.name, acks)
		}
	}
}
