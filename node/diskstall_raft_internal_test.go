package node

import (
	"slices"
	"testing"
)

// TestHandOffTarget: the leadership goes to the other voters the image
// shows live, in turn from one attempt to the next; to none when no other
// voter is live or there is none.
func TestHandOffTarget(t *testing.T) {
	liveOf := func(ids ...int32) func(int32) bool { return func(id int32) bool { return slices.Contains(ids, id) } }
	for _, c := range []struct {
		name    string
		voters  []uint64
		live    func(int32) bool
		attempt int
		want    uint64
	}{
		{"the only other live voter", []uint64{1, 2, 3}, liveOf(1, 3), 0, 3},
		{"still it at the next attempt", []uint64{1, 2, 3}, liveOf(1, 3), 1, 3},
		{"the first live other voter", []uint64{1, 2, 3}, liveOf(1, 2, 3), 0, 2},
		{"the next one at the next attempt", []uint64{1, 2, 3}, liveOf(1, 2, 3), 1, 3},
		{"the first again after every one", []uint64{1, 2, 3}, liveOf(2, 3), 2, 2},
		{"none live", []uint64{1, 2, 3}, liveOf(1), 0, 0},
		{"a sole voter", []uint64{1}, liveOf(1), 0, 0},
		{"no voters known", nil, liveOf(1, 2), 0, 0},
	} {
		if got := handOffTarget(c.voters, 1, c.live, c.attempt); got != c.want {
			t.Errorf("%s: voters %v, attempt %d: %d, want %d", c.name, c.voters, c.attempt, got, c.want)
		}
	}
}
