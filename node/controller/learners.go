package controller

import (
	"context"
	"slices"
	"time"

	"paymentlog/node/metadata"
)

// learnerTimeout bounds one AddLearner or RemoveLearner call.
const learnerTimeout = 5 * time.Second

func (c *Controller) kickLearners() {
	select {
	case c.learnerKick <- struct{}{}:
	default:
	}
}

// learnersMissing reports whether the raft learners differ from the
// registered broker-only nodes: one is not yet a raft member, or a learner
// is no longer registered (unregistered).
func (c *Controller) learnersMissing(img *metadata.Image) bool {
	st := c.cfg.Raft.Status()
	add, remove := learnerChanges(st.Voters, st.Learners, img)
	return len(add) > 0 || len(remove) > 0
}

// learnerChanges returns the registered brokers that are no raft member
// (to add as learners) and the learners that are not registered brokers (to
// remove: a learner is added only after its registration commits, so one
// without a registration was unregistered).
func learnerChanges(voters, learners []uint64, img *metadata.Image) (add []metadata.BrokerState, remove []uint64) {
	for _, b := range img.Brokers() {
		id := uint64(b.ID)
		if !slices.Contains(voters, id) && !slices.Contains(learners, id) {
			add = append(add, b)
		}
	}
	for _, id := range learners {
		if _, ok := img.Broker(int32(id)); !ok {
			remove = append(remove, id)
		}
	}
	return add, remove
}

// learnerLoop keeps the raft learners equal to the registered broker-only
// nodes: it adds every registered broker that is not a raft member and
// removes learners that were unregistered. It runs beside the decision loop
// so a slow conf change never delays decisions.
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
		add, remove := learnerChanges(st.Voters, st.Learners, c.cfg.Store.Image())
		for _, b := range add {
			actx, cancel := context.WithTimeout(ctx, learnerTimeout)
			err := c.cfg.Raft.AddLearner(actx, uint64(b.ID), b.Addr)
			cancel()
			if err != nil {
				c.log.Warn("adding raft learner failed", "broker", b.ID, "addr", b.Addr, "err", err)
				continue
			}
			c.log.Info("added raft learner", "broker", b.ID, "addr", b.Addr)
		}
		for _, id := range remove {
			actx, cancel := context.WithTimeout(ctx, learnerTimeout)
			err := c.cfg.Raft.RemoveLearner(actx, id)
			cancel()
			if err != nil {
				c.log.Warn("removing raft learner failed", "broker", id, "err", err)
				continue
			}
			c.log.Info("removed raft learner of an unregistered broker", "broker", id)
		}
	}
}
