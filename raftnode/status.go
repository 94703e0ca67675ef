package raftnode

import (
	"context"
	"slices"

	"go.etcd.io/raft/v3"
)

// Status is a snapshot of raft's view.
type Status struct {
	ID       uint64
	Leader   uint64 // 0 when unknown
	Term     uint64
	Applied  uint64
	Commit   uint64
	IsLeader bool
	// LastIndex is the last index of the log on disk.
	LastIndex uint64
	// VoteGuarded: the node withholds its vote until it has caught up (see
	// Config.RejoinGuard).
	VoteGuarded bool
	// GuardNonce is the nonce in the rejoin guard's marker while
	// VoteGuarded ("" otherwise, and for an older build's marker; see
	// LiftGuard).
	GuardNonce string
	Voters     []uint64
	Learners   []uint64
	// RefusedSnapshot says why the last snapshot from the leader was
	// refused (see SnapshotChecker); "" when none was since the last one
	// installed.
	RefusedSnapshot string
	// DiskFull is why the node is stalled on a full disk ("" when it is
	// not): it then takes part in nothing (diskfull.go), and Leader is 0
	// and IsLeader false whatever raft last knew.
	DiskFull string
}

// Status returns raft's current view (as of the last handled Ready).
func (n *Node) Status() Status {
	n.mu.Lock()
	defer n.mu.Unlock()
	s := n.mu.status
	s.Voters = slices.Clone(s.Voters)
	s.Learners = slices.Clone(s.Learners)
	return s
}

// LeaderChanges delivers the new leader id (0 = none) whenever it changes.
// The channel is buffered and drops stale values; read Status for the latest.
func (n *Node) LeaderChanges() <-chan uint64 { return n.leaderc }

// statusChanged returns a channel closed at the next status change.
func (n *Node) statusChanged() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mu.changed
}

// publishStatus refreshes Status from the loop's state; loop only.
func (n *Node) publishStatus() {
	bs := n.rn.BasicStatus()
	s := Status{
		ID:          n.id,
		Leader:      bs.Lead,
		Term:        bs.GetTerm(),
		Applied:     n.applied,
		Commit:      bs.GetCommit(),
		IsLeader:    bs.RaftState == raft.StateLeader,
		LastIndex:   n.st.lastIndex(),
		VoteGuarded: n.guard.on,
		GuardNonce:  n.guard.nonce,
		Voters:      slices.Clone(n.confState.GetVoters()),
		Learners:    slices.Clone(n.confState.GetLearners()),
	}
	if n.refused.err != nil {
		s.RefusedSnapshot = n.refused.err.Error()
	}
	if n.stall != nil {
		s.Leader, s.IsLeader, s.DiskFull = 0, false, n.stall.err.Error()
	}
	slices.Sort(s.Voters)
	slices.Sort(s.Learners)
	n.mu.Lock()
	defer n.mu.Unlock()
	if statusEqual(s, n.mu.status) {
		return
	}
	n.mu.status = s
	close(n.mu.changed)
	n.mu.changed = make(chan struct{})
}

func statusEqual(a, b Status) bool {
	return a.ID == b.ID && a.Leader == b.Leader && a.Term == b.Term && a.Applied == b.Applied &&
		a.Commit == b.Commit && a.IsLeader == b.IsLeader && a.LastIndex == b.LastIndex &&
		a.VoteGuarded == b.VoteGuarded && a.GuardNonce == b.GuardNonce && slices.Equal(a.Voters, b.Voters) &&
		slices.Equal(a.Learners, b.Learners) && a.RefusedSnapshot == b.RefusedSnapshot &&
		a.DiskFull == b.DiskFull
}

// WaitApplied returns once this node has applied the log up to index
// (Status().Applied >= index), or with ctx's error, or ErrStopped.
func (n *Node) WaitApplied(ctx context.Context, index uint64) error {
	for {
		ch := n.statusChanged()
		if n.Status().Applied >= index {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-n.donec:
			return ErrStopped
		}
	}
}
