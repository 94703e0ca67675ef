package node

import (
	"context"

	"paymentlog/internal/portprobe"
)

// portProbe is the active controller's probe of a silent broker's port
// (controller.Config.Probe, node/controller/probe.go): nil when
// --port-probe-after is 0. A probe waits for the refusal as long as the
// silence before it; a refusal comes within a round trip, and a broker
// still silent is probed again at the next check.
func portProbe(cfg Config) func(context.Context, string) (portprobe.Result, error) {
	if cfg.PortProbeAfter <= 0 {
		return nil
	}
	wait := max(cfg.PortProbeAfter, cfg.HeartbeatInterval+cfg.HeartbeatInterval/2)
	return func(ctx context.Context, addr string) (portprobe.Result, error) {
		return portprobe.Probe(ctx, addr, wait)
	}
}
