package node

import (
	"testing"
	"time"
)

// A metadata follower probes its raft leader once one of the leader's
// heartbeats (one a raft tick) is missing: after 1.5 heartbeat intervals,
// rounded up to 2 ticks, or sooner if --port-probe-after is shorter.
func TestLeaderProbeTicks(t *testing.T) {
	for _, c := range []struct {
		tick, after time.Duration
		want        int
	}{
		{25 * time.Millisecond, DefaultPortProbeAfter, 2}, // the defaults: 75 ms would be 3 ticks
		{25 * time.Millisecond, time.Second, 2},
		{25 * time.Millisecond, 25 * time.Millisecond, 1},
		{25 * time.Millisecond, time.Millisecond, 1},
		{100 * time.Millisecond, 75 * time.Millisecond, 1},
		{25 * time.Millisecond, 0, 0}, // off
	} {
		cfg := DefaultConfig()
		cfg.RaftTick, cfg.PortProbeAfter = c.tick, c.after
		if got := leaderProbeTicks(cfg); got != c.want {
			t.Errorf("tick %v, --port-probe-after %v: %d ticks, want %d", c.tick, c.after, got, c.want)
		}
	}
}
