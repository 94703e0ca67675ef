package node

import (
	"context"
	"time"

	"paymentlog/internal/portprobe"
)

// portProbe is the active controller's probe of a silent broker's port
// (controller.Config.Probe, node/controller/probe.go), and a metadata
// follower's of a silent raft leader's (raftnode.Config.LeaderProbe,
// raftnode/leadergone.go): nil when --port-probe-after is 0. A probe waits
// for the refusal as long as the silence before it; a refusal comes within
// a round trip, and a broker still silent is probed again at the next
// check.
func portProbe(cfg Config) func(context.Context, string) (portprobe.Result, error) {
	if cfg.PortProbeAfter <= 0 {
		return nil
	}
	wait := portProbeAfter(cfg)
	return func(ctx context.Context, addr string) (portprobe.Result, error) {
		return portprobe.Probe(ctx, addr, wait)
	}
}

// portProbeAfter is --port-probe-after, at least 1.5 heartbeat intervals
// (a broker is not probed before a heartbeat is missing).
func portProbeAfter(cfg Config) time.Duration {
	return max(cfg.PortProbeAfter, cfg.HeartbeatInterval+cfg.HeartbeatInterval/2)
}

// leaderProbeTicks is --port-probe-after in raft ticks, rounded up: the
// silence after which a metadata follower probes its raft leader's port
// (raftnode.Config.LeaderProbeTicks; at least 1).
func leaderProbeTicks(cfg Config) int {
	if cfg.RaftTick <= 0 || cfg.PortProbeAfter <= 0 {
		return 0
	}
	return max(int((cfg.PortProbeAfter+cfg.RaftTick-1)/cfg.RaftTick), 1)
}
