package chaos

import (
	"strings"
	"testing"
)

// TestCountFaultsOnlyApplied: the fault counts (printed in the summary and
// checked by e2e's TestChaos against PerKind) leave out skipped faults and
// faults whose kill, pause or isolation failed.
func TestCountFaultsOnlyApplied(t *testing.T) {
	events := []Event{
		{Fault: Fault{Kind: KillNode}, Victim: 1},
		{Fault: Fault{Kind: KillNode, Torn: &Torn{}}, Victim: 2, Torn: &TornResult{Len: 10, Changed: 10}},
		{Fault: Fault{Kind: KillNode}, Victim: 3, NotApplied: true, Note: "error: node 3 did not exit"},
		{Fault: Fault{Kind: Pause}, Victim: 1, NotApplied: true, Note: "error: no such process"},
		{Fault: Fault{Kind: Pause}, Victim: 2},
		{Fault: Fault{Kind: NetPartition}, Note: "skipped: no network namespaces"},
	}
	got := countFaults(events)
	want := map[Kind]int{KillNode: 2, TornTail: 1, Pause: 1}
	for _, k := range AllKinds {
		if got[k] != want[k] {
			t.Errorf("%s: %d, want %d (counts %v)", k, got[k], want[k], got)
		}
	}
	if s := events[2].String(); !strings.Contains(s, "NOT APPLIED") {
		t.Errorf("event line %q does not say the fault was not applied", s)
	}
}
