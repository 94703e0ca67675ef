package chaos

import (
	"strings"
	"testing"
)

// TestCheckSchedulable: a set of kinds that cannot deal what was asked is
// refused before the run: partitions only, without network namespaces
// (an empty set, which Plan would have turned into every kind); torn-tail
// alone (empty decks); torn tails with no kill to ride on.
func TestCheckSchedulable(t *testing.T) {
	cases := []struct {
		kinds   []Kind
		wantErr string
	}{
		{AllKinds, ""},
		{[]Kind{KillNode}, ""},
		{[]Kind{Pause, NetPartition}, ""},
		{[]Kind{KillLeader, TornTail}, ""},
		{nil, "no fault kind left"},
		{[]Kind{TornTail}, "no fault kind left"},
		{[]Kind{Pause, TornTail}, "torn-tail needs a kill kind"},
	}
	for _, tc := range cases {
		err := checkSchedulable(tc.kinds, []Kind{NetPartition}, "no netns")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.kinds, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: error %v, want %q", tc.kinds, err, tc.wantErr)
		}
	}

	// What the check prevents: the empty set becomes every kind, and
	// torn-tail alone deals an empty deck.
	if p := (Plan{Kinds: nil}).withDefaults(); len(p.Kinds) != len(AllKinds) {
		t.Fatalf("plan defaults: %v", p.Kinds)
	}
	if s := NewSchedule(Plan{Kinds: []Kind{TornTail}}); s.DeckSize() != 0 {
		t.Fatalf("torn-tail alone: deck of %d", s.DeckSize())
	}
}

// TestRunRefusesUnschedulableKinds: Run refuses such a set before it starts
// a cluster (the binary here does not exist: getting that far fails
// differently).
func TestRunRefusesUnschedulableKinds(t *testing.T) {
	for _, kinds := range [][]Kind{{TornTail}, {Pause, TornTail}} {
		_, err := Run(t.Context(), Config{Binary: "/nonexistent/paymentlog", Kinds: kinds, BaseDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), "torn-tail") {
			t.Errorf("kinds %v: %v", kinds, err)
		}
	}
}
