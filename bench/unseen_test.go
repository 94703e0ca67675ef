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

// withBroker sets broker id's incarnation and FencedAt.
func withBroker(m *wire.MetadataResponse, id int32, inc int64, fencedAt uint64) *wire.MetadataResponse {
	for i := range m.Brokers {
		if m.Brokers[i].ID == id {
			m.Brokers[i].Incarnation, m.Brokers[i].FencedAt = inc, fencedAt
		}
	}
	return m
}

// TestFencingsBetweenPollsCount: a broker fenced and unfenced between two
// polls looks alive in both; when it was in no ISR no partition epoch
// moved either. Its FencedAt (or, after a restart, its incarnation) did,
// and the fencing counts.
func TestFencingsBetweenPollsCount(t *testing.T) {
	isr12 := []int32{1, 2} // broker 3 is in no ISR
	fenced3 := map[int32]string{1: "alive", 2: "alive", 3: "fenced"}
	view := func(off int64, states map[int32]string, inc int64, fencedAt uint64) *wire.MetadataResponse {
		return withBroker(withEpoch(md(off, 1, states, isr12, 1, 0), 5), 3, inc, fencedAt)
	}
	cases := []struct {
		name string
		a, b *wire.MetadataResponse
		want int
	}{
		{"nothing", view(10, alive3, 7, 4), view(11, alive3, 7, 4), 0},
		{"fenced, seen", view(10, alive3, 7, 4), view(12, fenced3, 7, 11), 1},
		{"fenced and unfenced between polls (a pause)", view(10, alive3, 7, 4), view(14, alive3, 7, 12), 1},
		{"killed, fenced, restarted and unfenced between polls", view(10, alive3, 7, 4), view(20, alive3, 8, 15), 1},
		{"restarted while already fenced", view(12, fenced3, 7, 11), view(20, alive3, 8, 15), 0},
		{"unfenced", view(12, fenced3, 7, 11), view(13, alive3, 7, 11), 0},
		{"unfenced and fenced again between polls", view(12, fenced3, 7, 11), view(20, fenced3, 7, 18), 1},
		{"a view from a node without FencedAt", view(10, alive3, 7, 4), view(11, alive3, 7, 0), 0},
	}
	for _, tc := range cases {
		if got := diffViews(tc.a, tc.b); got.Fencings != tc.want || got.Unseen != 0 {
			t.Errorf("%s: %+v, want %d fencings", tc.name, got, tc.want)
		}
	}
}
