package node

import (
	"context"
	"time"

	"paymentlog/internal/portprobe"
	"paymentlog/quic"
	"paymentlog/raftnode"
)

// portProbe is the active controller's probe of a silent broker's port
// (controller.Config.Probe, node/controller/probe.go), and a metadata
// follower's of a silent raft leader's (raftnode.Config.LeaderProbe,
// raftnode/leadergone.go): nil when --port-probe-after is 0.
//
// The node's own QUIC traffic to the peer answers first: if a datagram the
// endpoint sent there drew an ICMP port unreachable after the peer was last
// heard from (quic.Endpoint.PortClosedSince), the port is closed and no
// probe is sent. Between hosts that is the common case: the dead host sends
// each peer only a few ICMP errors at once, then one a second, and the
// traffic to the dead port draws them before the silence has lasted long
// enough for a probe. Otherwise a probe waits for the refusal as long as the
// silence before it (a refusal comes within a round trip; a broker still
// silent is probed again at the next check), and the endpoint is asked
// again after it.
func portProbe(cfg Config, ep *quic.Endpoint) portprobe.Func {
	if cfg.PortProbeAfter <= 0 {
		return nil
	}
	wait := portProbeAfter(cfg)
	return func(ctx context.Context, addr string, since time.Time) (portprobe.Result, error) {
		if ep.PortClosedSince(addr, since) {
			return portprobe.Seen, nil
		}
		var res portprobe.Result // Open
		var err error
		if !cfg.probesUnanswered {
			res, err = portprobe.Probe(ctx, addr, wait)
		}
		if res != portprobe.Closed && ep.PortClosedSince(addr, since) {
			return portprobe.Seen, nil
		}
		return res, err
	}
}

// portProbeAfter is --port-probe-after, at least 1.5 heartbeat intervals
// (a broker is not probed before a heartbeat is missing).
func portProbeAfter(cfg Config) time.Duration {
	return max(cfg.PortProbeAfter, cfg.HeartbeatInterval+cfg.HeartbeatInterval/2)
}

// leaderProbeTicks is the silence, in raft ticks, after which a metadata
// follower probes its raft leader's port (raftnode.Config.LeaderProbeTicks):
// leaderSilenceTicks, or --port-probe-after in raft ticks (rounded up) when
// that is shorter; at least 1.
func leaderProbeTicks(cfg Config) int {
	if cfg.RaftTick <= 0 || cfg.PortProbeAfter <= 0 {
		return 0
	}
	return max(min(int((cfg.PortProbeAfter+cfg.RaftTick-1)/cfg.RaftTick), leaderSilenceTicks), 1)
}

// leaderSilenceTicks is 1.5 of a raft leader's heartbeat intervals, rounded
// up to whole ticks: the raft leader heartbeats every tick (raftnode's
// HeartbeatTicks, 1), so one heartbeat is missing after 2 ticks of silence,
// as one of a broker's is after --port-probe-after (1.5 broker heartbeat
// intervals). It used to wait --port-probe-after (3 ticks of 25 ms): a
// killed raft leader that was also a partition's leader kept that
// partition unwritable 25 ms longer, at a cost of one probe of a port that
// is open when a heartbeat is merely late (a probe acts only on a refusal).
const leaderSilenceTicks = (3*raftnode.DefaultHeartbeatTicks + 1) / 2
