package bench

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The leader's line from a full-load run (fifty-fifth session), verbatim.
const shrinkLine = `time=2026-12-05T20:30:58.368Z level=INFO msg="shrinking ISR: follower out of sync" node=2 component=broker topic=bench-throughput-1796502653648342915 partition=4 follower=1 leader_leo=65010 hw=56145 lag_time=2s proposed_isr="[2 3]" behind=8865 caught_up_ago=2.161s fetched_ago=156ms`

// TestChangeReasonsFromNodeLogs: the leaders' shrink lines and the
// controller's fencing lines become reasons, nodes in id order; other
// lines do not.
func TestChangeReasonsFromNodeLogs(t *testing.T) {
	var ctl bytes.Buffer
	log := slog.New(slog.NewTextHandler(&ctl, nil)).With("node", 3)
	log.Info("proposing ISR change", "topic", "t", "partition", 0, "isr", "[1 2]")
	log.Warn("broker session expired; fencing", "broker", 1, "incarnation", 17, "overdue", 12*time.Millisecond)
	log.Warn("broker silent and its port found closed (its process is gone); fencing before its session runs out",
		"broker", 2, "incarnation", 18, "addr", "127.0.0.1:7102", "silent", 80*time.Millisecond, "found_by", "probe")
	logs := map[int32][]byte{
		3: ctl.Bytes(),
		2: []byte("### localcluster start #1\n" + shrinkLine + "\ntime=x level=INFO msg=\"became leader\" topic=t partition=4\n"),
	}
	got, more := changeReasons(logs)
	want := []string{
		"node 2, leading bench-throughput-1796502653648342915-4, left follower 1 out of the ISR: 8865 records behind, last caught up 2.161s ago, last fetch 156ms ago (lag time 2s)",
		"node 3, the controller, fenced broker 1: broker session expired; fencing (the check ran 12ms late)",
		"node 3, the controller, fenced broker 2: broker silent and its port found closed (its process is gone); fencing before its session runs out",
	}
	if more != 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reasons (%d more):\n%s\nwant:\n%s", more, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestChangeReasonsAreBounded: past maxChangeReasons the rest are counted.
func TestChangeReasonsAreBounded(t *testing.T) {
	var b strings.Builder
	for i := range maxChangeReasons + 3 {
		fmt.Fprintln(&b, strings.Replace(shrinkLine, "partition=4", fmt.Sprintf("partition=%d", i), 1))
	}
	got, more := changeReasons(map[int32][]byte{2: []byte(b.String())})
	if len(got) != maxChangeReasons || more != 3 || !strings.Contains(got[0], "-0,") || !strings.Contains(got[4], "-4,") {
		t.Fatalf("%d reasons, %d more: %q", len(got), more, got)
	}
}

// TestLogFieldsParsesQuotedValues: quoted values keep their spaces and
// escapes; a line cut inside a quote keeps the fields before it.
func TestLogFieldsParsesQuotedValues(t *testing.T) {
	f := logFields([]byte(`level=WARN msg="a \"quoted\" = word" broker=1 addr=127.0.0.1:7101`))
	if f["level"] != "WARN" || f["msg"] != `a "quoted" = word` || f["broker"] != "1" || f["addr"] != "127.0.0.1:7101" {
		t.Fatalf("fields %q", f)
	}
	f = logFields([]byte(`level=INFO msg="cut off`))
	if f["level"] != "INFO" || len(f) != 1 {
		t.Fatalf("fields of a cut line %q", f)
	}
}

// FuzzChangeReason: any line parses without a panic.
func FuzzChangeReason(f *testing.F) {
	f.Add([]byte(shrinkLine))
	f.Add([]byte(`level=WARN msg="x fencing" broker=1 overdue=1ms`))
	f.Add([]byte(`msg="\`))
	f.Add([]byte(`=msg= msg=`))
	f.Fuzz(func(t *testing.T, line []byte) {
		changeReason(1, line)
	})
}

// Rounds keep each round's reasons, named by round, within the bound.
func TestCombineRoundsKeepsTheChangeReasons(t *testing.T) {
	a, b, c := roundResult("a", 90, 300, 30, 0), roundResult("b", 100, 300, 30, 0), roundResult("c", 110, 300, 30, 0)
	a.ChangeReasons = []string{"a1"}
	c.ChangeReasons, c.ChangeReasonsMore = []string{"c1", "c2", "c3", "c4", "c5"}, 2
	got := combineRounds([]*ThroughputResult{a, b, c})
	want := []string{"round 1: a1", "round 3: c1", "round 3: c2", "round 3: c3", "round 3: c4"}
	if strings.Join(got.ChangeReasons, "|") != strings.Join(want, "|") || got.ChangeReasonsMore != 3 {
		t.Fatalf("reasons %q, %d more; want %q, 3 more", got.ChangeReasons, got.ChangeReasonsMore, want)
	}
}

// A log the scanner cannot read to the end says so among the reasons.
func TestChangeReasonsSayWhenALogIsUnread(t *testing.T) {
	long := "time=x level=INFO msg=\"" + strings.Repeat("x", 2<<20) + "\"\n"
	got, _ := changeReasons(map[int32][]byte{1: []byte(shrinkLine + "\n" + long + shrinkLine + "\n")})
	if len(got) != 2 || !strings.HasPrefix(got[0], "node 1, leading") || !strings.HasPrefix(got[1], "node 1: its log was not read to the end") {
		t.Fatalf("reasons %q", got)
	}
}
