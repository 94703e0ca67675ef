package node

import (
	"slices"
	"testing"
)

// TestHandOffTarget: the first attempt of a spell aside lets raft pick
// the most up-to-date voter (0) when every other voter is live; otherwise,
// and at the next attempts, the other voters the image shows live, in
// turn; none when no other voter is live or there is none.
func TestHandOffTarget(t *testing.T) {
	liveOf := func(ids ...int32) func(int32) bool { return func(id int32) bool { return slices.Contains(ids, id) } }
	for _, c := range []struct {
		name    string
		voters  []uint64
		live    func(int32) bool
		attempt int
		want    uint64
		ok      bool
	}{
		{"raft's pick, every other voter live", []uint64{1, 2, 3}, liveOf(1, 2, 3), 0, 0, true},
		{"the first other voter at the second attempt", []uint64{1, 2, 3}, liveOf(1, 2, 3), 1, 3, true},
		{"the next one at the third", []uint64{1, 2, 3}, liveOf(1, 2, 3), 2, 2, true},
		{"the only other live voter", []uint64{1, 2, 3}, liveOf(1, 3), 0, 3, true},
		{"still it at the next attempt", []uint64{1, 2, 3}, liveOf(1, 3), 1, 3, true},
		{"in turn among the live, one fenced", []uint64{1, 2, 3, 4, 5}, liveOf(2, 3, 5), 1, 3, true},
		{"none live", []uint64{1, 2, 3}, liveOf(1), 0, 0, false},
		{"a sole voter", []uint64{1}, liveOf(1), 0, 0, false},
		{"no voters known", nil, liveOf(1, 2), 0, 0, false},
	} {
		if got, ok := handOffTarget(c.voters, 1, c.live, c.attempt); got != c.want || ok != c.ok {
			t.Errorf("%s: voters %v, attempt %d: %d %v, want %d %v", c.name, c.voters, c.attempt, got, ok, c.want, c.ok)
		}
	}
}
