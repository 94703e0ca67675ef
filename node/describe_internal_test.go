package node

import (
	"testing"
	"time"
)

func TestDescribedController(t *testing.T) {
	now := time.Unix(1000, 0)
	const session = 250 * time.Millisecond
	for _, tc := range []struct {
		name    string
		leader  int32
		contact time.Time
		want    int32
	}{
		{"heartbeat answered just now", 2, now, 2},
		{"answered a session timeout ago", 2, now.Add(-session), 2},
		{"silent for longer than a session timeout", 2, now.Add(-session - time.Millisecond), -1},
		{"never answered", 2, time.Time{}, -1},
		{"no raft leader", -1, now, -1},
	} {
		if got := describedController(tc.leader, tc.contact, now, session); got != tc.want {
			t.Errorf("%s: describedController = %d, want %d", tc.name, got, tc.want)
		}
	}
}
