package bench

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKillCmdTimesAreUpperBounds: with --kill-cmd the kill instant is the
// command's start, before its shell has even started up; the SIGKILL comes
// later. The report must say the times are upper bounds and by how much
// (the command's own duration), in the JSON, the table and the targets.
func TestKillCmdTimesAreUpperBounds(t *testing.T) {
	if got := killInstant(&externalTarget{killCmd: "k {id}", restartCmd: "r {id}"}); got != KillInstantCmdStart {
		t.Fatalf("external target: kill instant %q", got)
	}
	if got := killInstant(&localTarget{}); got != KillInstantSignal {
		t.Fatalf("local target: kill instant %q", got)
	}

	res := &FailoverResult{Acked: 10, Verified: 10, KillInstant: KillInstantCmdStart}
	for i, k := range []float64{40, 55, 48} {
		res.Trials = append(res.Trials, FailoverTrial{Trial: i + 1, FenceMs: 900, NewLeaderMs: 950, UnavailableMs: 200, RejoinMs: 500, KillCmdMs: k})
	}
	res.summarize()
	ctl := &ControllerResult{KillInstant: KillInstantCmdStart, Trials: []ControllerTrial{{Trial: 1, Ms: 300, ElectedMs: 250, KillCmdMs: 61}}}
	ctl.Ms, ctl.ElectedMs, ctl.KillCmdMs = summarizeTrials([]float64{300}), summarizeTrials([]float64{250}), summarizeTrials([]float64{61})
	rep := Report{Failover: res, ControllerFailover: ctl}
	rep.checkTargets(Config{})

	var b strings.Builder
	rep.WriteTable(&b)
	table := b.String()
	for _, want := range []string{
		"upper bounds (the command took p50 48  p99 55  max 55 ms",
		"upper bounds (the command took p50 61",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	bounded := 0
	for _, tg := range rep.Targets {
		if strings.Contains(tg.Name, "unavailability") || strings.Contains(tg.Name, "controller failover") {
			if !strings.Contains(tg.Name, "upper bound") {
				t.Errorf("target %q does not say it is an upper bound", tg.Name)
			}
			bounded++
		}
	}
	if bounded != 3 {
		t.Errorf("%d timing targets: %+v", bounded, rep.Targets)
	}

	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kill_instant":"kill_cmd_start"`, `"kill_cmd_ms":40`, `"kill_cmd_ms":{"n":3`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s: %s", want, js)
		}
	}

	// The local cluster's kill is the SIGKILL itself: no bound to mention.
	res.KillInstant, ctl.KillInstant = KillInstantSignal, KillInstantSignal
	rep = Report{Failover: res, ControllerFailover: ctl}
	rep.checkTargets(Config{})
	b.Reset()
	rep.WriteTable(&b)
	if strings.Contains(b.String(), "upper bound") {
		t.Errorf("exact kill times called upper bounds:\n%s", b.String())
	}
}
