package node

import (
	"context"
	"time"
)

// controlledShutdown asks the controller to move this broker's leaderships
// away (heartbeats with WantShutdown until it answers ShutdownReady or ctx
// ends), then hands raft leadership to another controller if this node is the
// active one, so the cluster keeps a controller without waiting for an
// election timeout.
func (n *Node) controlledShutdown(ctx context.Context) {
	t := time.NewTicker(n.cfg.HeartbeatInterval)
	defer t.Stop()
	lastOK := time.Now()
	for {
		resp, ok := n.heartbeatOnce(ctx, true)
		if ok && resp.ShutdownReady {
			n.log.Info("controlled shutdown: leaderships moved")
			break
		}
		if ok {
			lastOK = time.Now()
		} else if time.Since(lastOK) > n.cfg.SessionTimeout {
			// No controller can commit anything (e.g. the last node of a
			// cluster going down): there is nobody to hand leaderships to.
			n.log.Warn("controlled shutdown: no controller answers; stopping without moving leaderships")
			return
		}
		select {
		case <-ctx.Done():
			n.log.Warn("controlled shutdown: timed out waiting for leaderships to move")
			return
		case <-t.C:
		}
	}
	st := n.raft.Status()
	if !st.IsLeader {
		return
	}
	for _, v := range st.Voters {
		if v == st.ID {
			continue
		}
		tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := n.raft.TransferLeadership(tctx, v)
		cancel()
		if err == nil {
			n.log.Info("controlled shutdown: controller leadership transferred", "to", v)
			return
		}
	}
}
