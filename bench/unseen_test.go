package bench

import (
	"strings"
	"testing"

	"paymentlog/wire"
)

// withEpoch sets partition 0's partition epoch.
func withEpoch(m *wire.MetadataResponse, pepoch int32) *wire.MetadataResponse {
	m.Topics[0].Partitions[0].PartitionEpoch = pepoch
	return m
}

// TestChangesBetweenPollsCount: the watcher polls (every 50 ms in the
// throughput phase); an ISR that shrank and re-expanded between two polls
// looks unchanged. The partition epoch, bumped once per committed change,
// says how many changes the views missed, and "0 ISR shrinks without
// faults" must not be met while any was missed.
func TestChangesBetweenPollsCount(t *testing.T) {
	full := []int32{1, 2, 3}
	cases := []struct {
		name string
		a, b *wire.MetadataResponse
		want Changes
	}{
		{"nothing", withEpoch(md(1, 1, alive3, full, 1, 0), 5), withEpoch(md(2, 1, alive3, full, 1, 0), 5), Changes{}},
		{"shrunk and re-expanded unseen", withEpoch(md(1, 1, alive3, full, 1, 0), 5), withEpoch(md(3, 1, alive3, []int32{3, 2, 1}, 1, 0), 7), Changes{Unseen: 2}},
		{"one shrink seen", withEpoch(md(1, 1, alive3, full, 1, 0), 5), withEpoch(md(2, 1, alive3, []int32{1, 2}, 1, 0), 6), Changes{ISRShrinks: 1}},
		{"a shrink seen, two more unseen", withEpoch(md(1, 1, alive3, full, 1, 0), 5), withEpoch(md(4, 1, alive3, []int32{1, 3}, 1, 0), 8), Changes{ISRShrinks: 1, Unseen: 2}},
		{"new leader and ISR in one change", withEpoch(md(1, 1, alive3, full, 1, 0), 5), withEpoch(md(2, 1, alive3, []int32{2, 3}, 2, 1), 6), Changes{ISRShrinks: 1, LeaderChanges: 1}},
	}
	for _, tc := range cases {
		if got := diffViews(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}

	rep := Report{Throughput: &ThroughputResult{Changes: Changes{Unseen: 2}}}
	rep.checkTargets(Config{})
	found := false
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Name, "ISR shrinks + fencings without faults") {
			found = true
			if tg.Met || tg.Value != 2 {
				t.Errorf("%s: value %v met %v with 2 partition changes unseen", tg.Name, tg.Value, tg.Met)
			}
		}
	}
	if !found {
		t.Fatalf("targets %+v", rep.Targets)
	}
}
