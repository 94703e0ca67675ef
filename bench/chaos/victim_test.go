package chaos

import (
	"errors"
	"strings"
	"testing"
)

// TestFallbackKillCountsAsKillNode: a kill-leader or kill-controller that
// finds no leader or controller kills a random node. That is a kill-node:
// counting it as a kill-leader would let a run claim PerKind leader kills
// it never made. The fallback is counted apart and shown.
func TestFallbackKillCountsAsKillNode(t *testing.T) {
	ids := []int32{1, 2, 3}
	noLeader := func(int32) (int32, error) { return -1, errors.New("no leader") }
	noController := func() (int32, error) { return -1, errors.New("no controller") }
	leader2 := func(int32) (int32, error) { return 2, nil }
	controller3 := func() (int32, error) { return 3, nil }

	var events []Event
	apply := func(f Fault, leader func(int32) (int32, error), controller func() (int32, error)) victimChoice {
		ch := chooseVictim(f, ids, 3, leader, controller)
		events = append(events, Event{Fault: f, Kind: ch.kind, Fallback: ch.fallback, Victim: ch.victim, Target: ch.target, Note: ch.note})
		return ch
	}
	if ch := apply(Fault{Kind: KillLeader, Pick: 4}, leader2, controller3); ch.victim != 2 || ch.kind != KillLeader || ch.fallback {
		t.Fatalf("leader known: %+v", ch)
	}
	if ch := apply(Fault{Kind: KillController, Pick: 4}, leader2, controller3); ch.victim != 3 || ch.kind != KillController || ch.fallback {
		t.Fatalf("controller known: %+v", ch)
	}
	ch := apply(Fault{Kind: KillLeader, Pick: 4}, noLeader, controller3)
	if ch.victim != 2 || ch.kind != KillNode || !ch.fallback || ch.target != "random" || !strings.Contains(ch.note, "random node instead") {
		t.Fatalf("kill-leader without a leader: %+v", ch)
	}
	if ch := apply(Fault{Kind: KillController, Pick: 0}, leader2, noController); ch.victim != 1 || ch.kind != KillNode || !ch.fallback {
		t.Fatalf("kill-controller without a controller: %+v", ch)
	}
	// A pause aimed at a leader stays a pause on a random node.
	if ch := apply(Fault{Kind: Pause, Target: TargetLeader, Pick: 1}, noLeader, controller3); ch.victim != 2 || ch.kind != Pause || !ch.fallback {
		t.Fatalf("pause without a leader: %+v", ch)
	}
	if ch := apply(Fault{Kind: KillNode, Pick: 2}, noLeader, noController); ch.victim != 3 || ch.kind != KillNode || ch.fallback {
		t.Fatalf("kill-node: %+v", ch)
	}

	got := countFaults(events)
	want := map[Kind]int{KillLeader: 1, KillController: 1, KillNode: 3, Pause: 1}
	for _, k := range AllKinds {
		if got[k] != want[k] {
			t.Errorf("%s: %d, want %d (counts %v)", k, got[k], want[k], got)
		}
	}
	fb := countFallbacks(events)
	if fb[KillLeader] != 1 || fb[KillController] != 1 || fb[Pause] != 1 || len(fb) != 3 {
		t.Errorf("fallbacks %v", fb)
	}
	if s := events[2].String(); !strings.Contains(s, "FALLBACK") || !strings.Contains(s, "counted as kill-node") {
		t.Errorf("event line %q does not say it fell back", s)
	}

	var b strings.Builder
	(&Result{Counts: got, Fallbacks: fb}).WriteSummary(&b)
	if !strings.Contains(b.String(), "kill-leader=1 kill-controller=1 pause=1") {
		t.Errorf("summary does not list the fallbacks:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "faults: 6 applied:") || strings.Contains(b.String(), "torn tail rides") {
		t.Errorf("summary's total is not the sum of the kinds:\n%s", b.String())
	}

	// A torn tail rides on a kill: counted under both, once in the total.
	b.Reset()
	(&Result{Counts: map[Kind]int{KillNode: 2, TornTail: 1}}).WriteSummary(&b)
	if !strings.Contains(b.String(), "faults: 2 applied:") || !strings.Contains(b.String(), "torn-tail=1") || !strings.Contains(b.String(), "torn tail rides on a kill") {
		t.Errorf("summary with a torn tail:\n%s", b.String())
	}
}
