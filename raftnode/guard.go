package raftnode

import (
	"context"
	"fmt"
	"slices"

	pb "go.etcd.io/raft/v3/raftpb"
)

// rejoinGuardFile, in the metadata directory, marks a voter that started
// with empty storage under Config.RejoinGuard and has not yet caught up. Its
// content is empty: only its presence counts. It is written (atomically and
// durably) before the bootstrap entries, and removed when the guard lifts;
// the removal is not followed by a directory fsync, so a crash may bring it
// back, which only costs another catch-up.
const rejoinGuardFile = "rejoin-guard"

// voteGuard is the rejoin guard's state. Owned by the Ready loop.
//
// While on, the node's outgoing MsgVote, MsgPreVote, MsgVoteResp and
// MsgPreVoteResp are dropped and incoming MsgTimeoutNow is ignored: it
// grants no vote and wins no election, but otherwise follows the leader
// (appends, snapshots, heartbeats). Dropping messages is always safe in
// raft. It lifts once a target is set (CatchUpTo) and this node's commit
// index and term have reached it.
type voteGuard struct {
	on        bool
	targetSet bool
	index     uint64 // commit index to reach
	term      uint64 // term to reach
}

// startGuard decides, before the bootstrap, whether the node starts
// guarded: always if the marker file is present (a guarded start that has
// not caught up yet, even if its log is no longer empty); and for a voter
// with empty storage when cfg.RejoinGuard is set and the group has other
// voters (then the marker is written first).
func (n *Node) startGuard(fresh, voter bool) error {
	names, err := n.st.files.List()
	if err != nil {
		return err
	}
	if slices.Contains(names, rejoinGuardFile) {
		n.guard.on = true
		n.lg.Warn("raftnode: this node started with an empty raft log and has not yet caught up; it will not vote until it has (rejoin guard)")
		return nil
	}
	if !fresh || !voter || !n.cfg.RejoinGuard || len(n.cfg.Voters) < 2 {
		return nil
	}
	if err := n.st.files.WriteFile(rejoinGuardFile, nil); err != nil {
		return fmt.Errorf("raftnode: rejoin guard: %w", err)
	}
	n.guard.on = true
	n.lg.Info("raftnode: starting with an empty raft log; not voting until caught up with the other voters (rejoin guard)")
	return nil
}

// CatchUpTo sets the target a vote-guarded node (Config.RejoinGuard) must
// reach before it votes again: a commit index of at least index and a term
// of at least term. A second call raises the target to the larger of the
// two. It returns once the loop has the target; the guard lifts later, when
// the node has caught up (Status.VoteGuarded turns false). On a node that is
// not guarded it does nothing.
func (n *Node) CatchUpTo(ctx context.Context, index, term uint64) error {
	return n.do(ctx, func() {
		if !n.guard.on {
			return
		}
		g := &n.guard
		g.targetSet, g.index, g.term = true, max(g.index, index), max(g.term, term)
		n.lg.Info("raftnode: rejoin guard target", "commit", g.index, "epoch", g.term)
	})
}

// guardDrops reports whether the guard withholds outgoing m. Loop only.
func (n *Node) guardDrops(m *pb.Message) bool {
	if !n.guard.on {
		return false
	}
	switch m.GetType() {
	case pb.MsgVote, pb.MsgVoteResp, pb.MsgPreVote, pb.MsgPreVoteResp:
		return true
	}
	return false
}

// guardIgnores reports whether the guard ignores incoming m: a leader's
// MsgTimeoutNow would make this node campaign. Loop only.
func (n *Node) guardIgnores(m *pb.Message) bool {
	return n.guard.on && m.GetType() == pb.MsgTimeoutNow
}

// maybeLiftGuard lifts the guard once the target is reached: the marker is
// removed first, so that a failure leaves the node guarded. Loop only.
func (n *Node) maybeLiftGuard() error {
	g := &n.guard
	if !g.on || !g.targetSet {
		return nil
	}
	bs := n.rn.BasicStatus()
	if bs.GetCommit() < g.index || bs.GetTerm() < g.term {
		return nil
	}
	if err := n.st.files.Remove(rejoinGuardFile); err != nil {
		return fmt.Errorf("raftnode: lifting the rejoin guard: %w", err)
	}
	g.on = false
	n.lg.Info("raftnode: caught up; voting again (rejoin guard lifted)",
		"commit", bs.GetCommit(), "epoch", bs.GetTerm(), "target_commit", g.index, "target_epoch", g.term)
	return nil
}
