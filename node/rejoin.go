package node

import (
	"context"
	"errors"
	"slices"
	"time"

	"paymentlog/quic"
	"paymentlog/raftnode"
	"paymentlog/wire"
)

// A controller that starts with an empty metadata log — a first start, or a
// controller whose disk was replaced or whose data directory was wiped; the
// two look the same from inside — starts vote-guarded (raftnode's
// Config.RejoinGuard): it follows the active controller's log but grants no
// vote and does not campaign. awaitRejoinTarget then asks the other
// controllers (DescribeQuorum) for their log's last index and their term
// until enough of them have answered, and hands raftnode the highest of each
// as the target to catch up to; the guard lifts when this node's commit
// index and term reach it.
//
// Enough means rejoinAnswersNeeded(n) of the other n-1 controllers (n in
// all), not themselves guarded: so many that they intersect every majority
// that could have committed an entry (or elected a leader with this node's
// lost vote) before its log was lost. Every such entry is then in the log of
// one of them, at an index no greater than its last index; a leader elected
// without this node's vote holds it too, and this node's commit index,
// learned from that leader, reaching the target means it holds it as well.
//
// A cluster's first start is the other way to a target: its controllers all
// start empty and guarded, so none would count another's answer; when every
// other controller has answered and none has a term above 1, no leader was
// ever elected (unless a majority of the controllers lost their logs, which
// nothing survives) and the bootstrap entries are the target
// (rejoin_answers.go).
//
// At a first start, a controller whose questions come late finds the
// others already elected and past term 1, and must catch up from their
// leader; if that leader dies first, the others cannot elect without its
// vote. So a controller that lifts its guard as a first start vouches for
// the guarded controllers it saw then, by the nonce in their marker
// (raftnode.Status.GuardNonce), and says so in its DescribeQuorum answers
// (Witnessed); a guarded controller named there with its own nonce lifts
// its guard at once (raftnode.LiftGuard). Why that is safe, and for which
// nonces a controller vouches: rejoinAnswers.witnesses.
//
// The cost: a controller that starts empty cannot vote until that many
// unguarded controllers answer, and a new cluster forms only once every
// controller is up (Config.FirstStartWithMajority relaxes the latter, at a
// price). A majority of empty answers would not do: a controller that lost
// its log while the controllers holding the metadata are down, asking one
// that never received any (down since the cluster was created), gets the
// same answers as on a first start. See the README's operator section for
// the cases it does not cover.

// rejoinPollInterval is how often a vote-guarded controller asks the other
// controllers again while too few have answered.
const rejoinPollInterval = 250 * time.Millisecond

// rejoinAnswersNeeded is how many of the other voters of a group of n must
// answer: n - majority(n) + 1, i.e. enough to meet every majority that
// includes this node in another member.
func rejoinAnswersNeeded(n int) int { return n - (n/2 + 1) + 1 }

// quorumAnswer is one controller's DescribeQuorum answer (or the failure to
// get it).
type quorumAnswer struct {
	id   int32
	resp wire.DescribeQuorumResponse
	err  error
}

// describeControllers asks every controller but this one for its quorum view
// and waits for all of them or the timeout.
func describeControllers(ctx context.Context, n *Node, timeout time.Duration) []quorumAnswer {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var others []int32
	for id := range n.cfg.Controllers {
		if id != n.cfg.ID {
			others = append(others, id)
		}
	}
	answers := make(chan quorumAnswer, len(others))
	for _, id := range others {
		go func() {
			var resp wire.DescribeQuorumResponse
			err := n.ep.Call(quic.Idempotent(quic.ExpectNode(ctx, id)), n.cfg.Controllers[id], wire.TypeDescribeQuorum, wire.DescribeQuorumRequest{}, &resp)
			answers <- quorumAnswer{id, resp, err}
		}()
	}
	out := make([]quorumAnswer, 0, len(others))
	for range others {
		out = append(out, <-answers)
	}
	return out
}

// awaitRejoinTarget runs while this controller's raft node is vote-guarded:
// it gathers the other controllers' answers and sets the catch-up target, or
// lifts the guard at once when a first-start witness vouches for this node
// (see the comment at the top of this file). It returns once the target is
// set or the guard lifted, or when ctx ends.
func (n *Node) awaitRejoinTarget(ctx context.Context) error {
	var g rejoinAnswers
	others := len(n.cfg.Controllers)
	if n.cfg.ControllerEligible() {
		others-- // a guarded node is a voter, listed or not
	}
	g.init(n.cfg.ID, n.raft.Status().GuardNonce, others+1, n.cfg.FirstStartWithMajority)
	reported := ""
	confirming := false // this round confirms the previous one's first start
	t := time.NewTicker(rejoinPollInterval)
	defer t.Stop()
	for {
		if n.cfg.rejoinGate != nil {
			n.cfg.rejoinGate(ctx)
		}
		g.newRound()
		for _, a := range describeControllers(ctx, n, membershipCheckTimeout) {
			if a.err == nil && a.resp.Err == wire.None {
				g.add(a.id, a.resp)
			}
		}
		index, term, how, ok := g.target()
		var own map[int32]string
		if ok && how == howFirstStart {
			own = g.witnesses(n.raft.Status().Term)
			if len(own) < g.nonced() && !confirming {
				// Some guarded controller's nonce was first seen in this
				// round: ask everyone once more, at once, so that the
				// answers that make the first start come after it. Once:
				// after that round it lifts with what it can vouch for.
				confirming = true
				continue
			}
		}
		if ok {
			// Published in this node's answers once its guard is lifted.
			known := func(id int32) bool { _, ok := n.cfg.Controllers[id]; return ok }
			if w := g.vouchFor(own, known); w != nil {
				n.firstStartWitnesses.Store(&w)
				n.log.Info("rejoin guard: vouching for the guarded controllers seen at the cluster's first start", "witnessed", sortedKeys(w))
			}
			var err error
			if how == howWitnessed {
				by, _ := g.vouchedBy()
				n.log.Info("rejoin guard: a controller that saw this metadata log at the cluster's first start vouches for it; voting again",
					"witness", by, "nonce", g.nonce)
				err = n.raft.LiftGuard(ctx, g.nonce)
			} else {
				n.log.Info("rejoin guard: the other controllers answered; catching up before voting",
					"answered", g.unguardedIDs(), "guarded", g.guardedIDs(), "how", how, "target_offset", index, "target_epoch", term)
				err = n.raft.CatchUpTo(ctx, index, term)
			}
			if err != nil && !errors.Is(err, raftnode.ErrStopped) && ctx.Err() == nil {
				return err
			}
			return nil
		}
		if s := g.String(); s != reported {
			reported = s
			n.log.Warn("rejoin guard: this controller's metadata log was empty at start; it will not vote until enough of the other controllers answer with theirs",
				"answered", g.unguardedIDs(), "needed", g.need, "guarded", g.guardedIDs())
		}
		confirming = false
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func sortedKeys[V any](m map[int32]V) []int32 {
	out := make([]int32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
