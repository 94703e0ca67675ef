package controller

import (
	"context"
	"slices"
	"time"

	"paymentlog/node/metadata"
)

// learnerTimeout bounds one AddLearner call.
const learnerTimeout = 5 * time.Second

func (c *Controller) kickLearners() {
	select {
	case c.learnerKick <- struct{}{}:
	default:
	}
}

// learnersMissing reports whether a registered broker-only node is not yet a
// raft member.
func (c *Controller) learnersMissing(img *metadata.Image) bool {
	st := c.cfg.Raft.Status()
	for _, b := range img.Brokers() {
		id := uint64(b.ID)
		if !slices.Contains(st.Voters, id) && !slices.Contains(st.Learners, id) {
			return true
		}
	}
	return false
}

// learnerLoop adds every registered broker that is not a raft member as a
// learner. It runs beside the decision loop so a slow conf change never
// delays decisions.
func (c *Controller) learnerLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.learnerKick:
		}
		if !c.active() {
			continue
		}
		st := c.cfg.Raft.Status()
		for _, b := range c.cfg.Store.Image().Brokers() {
			id := uint64(b.ID)
			if slices.Contains(st.Voters, id) || slices.Contains(st.Learners, id) {
				continue
			}
			actx, cancel := context.WithTimeout(ctx, learnerTimeout)
			err := c.cfg.Raft.AddLearner(actx, id, b.Addr)
			cancel()
			if err != nil {
				c.log.Warn("adding raft learner failed", "broker", b.ID, "addr", b.Addr, "err", err)
				continue
			}
			c.log.Info("added raft learner", "broker", b.ID, "addr", b.Addr)
		}
	}
}
