package raftnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"go.etcd.io/raft/v3/tracker"
	"google.golang.org/protobuf/proto"
)

// ErrNoTransferTarget is returned by TransferLeadership when no other voter exists.
var ErrNoTransferTarget = errors.New("raftnode: no other voter to transfer leadership to")

// AddLearner proposes a conf change adding id at addr as a learner
// (idempotent: a node that is already a member only gets its address
// updated). It must be called on the leader (ErrNotLeader otherwise) and
// returns once the change is applied here. A change that raft refuses because
// another one is still being applied is retried until ctx ends.
func (n *Node) AddLearner(ctx context.Context, id uint64, addr string) error {
	if id == 0 {
		return fmt.Errorf("raftnode: add learner: id 0 is reserved")
	}
	if len(addr) > maxAddrLen {
		return fmt.Errorf("raftnode: add learner: address longer than %d bytes", maxAddrLen)
	}
	return n.changeMembership(ctx, "add learner", id, []byte(addr), pb.ConfChangeAddLearnerNode,
		func(voter, learner bool) (bool, error) {
			if voter || learner {
				n.peers.setAddr(id, addr)
				return true, nil
			}
			return false, nil
		})
}

// RemoveLearner proposes a conf change removing learner id: the leader
// stops replicating to it and forgets its address (idempotent: an id that
// is no member returns at once). A voter is refused: the voters are fixed.
// Like AddLearner it must be called on the leader and returns once the
// change is applied here.
func (n *Node) RemoveLearner(ctx context.Context, id uint64) error {
	return n.changeMembership(ctx, "remove learner", id, nil, pb.ConfChangeRemoveNode,
		func(voter, learner bool) (bool, error) {
			if voter {
				return false, fmt.Errorf("raftnode: remove learner: %d is a voter", id)
			}
			return !learner, nil
		})
}

// changeMembership proposes the conf change typ of id, carrying payload,
// until done (called on the loop with id's current membership) reports it
// made, or an error. Only the leader proposes (ErrNotLeader otherwise); a
// proposal raft drops because another conf change is still being applied
// is retried once the status changes, until ctx ends.
func (n *Node) changeMembership(ctx context.Context, what string, id uint64, payload []byte, typ pb.ConfChangeType,
	done func(voter, learner bool) (bool, error)) error {
	for {
		changed := n.statusChanged()
		var ok, leader bool
		var err error
		if derr := n.do(ctx, func() {
			ok, err = done(slices.Contains(n.confState.GetVoters(), id), slices.Contains(n.confState.GetLearners(), id))
			leader = n.rn.BasicStatus().RaftState == raft.StateLeader
		}); derr != nil {
			return derr
		}
		if ok || err != nil {
			return err
		}
		if !leader {
			return ErrNotLeader
		}
		pid := proposalID{node: n.id, seq: n.seq.Add(1)}
		cc := &pb.ConfChange{Type: typ.Enum(), NodeId: new(id), Context: encodeEnvelope(pid, payload)}
		data, err := proto.Marshal(cc)
		if err != nil {
			return fmt.Errorf("raftnode: %s: %w", what, err)
		}
		_, err = n.propose(ctx, newProposal(pid, &pb.Entry{Type: pb.EntryConfChange.Enum(), Data: data}))
		if !errors.Is(err, ErrProposalDropped) {
			return err
		}
		n.lg.Debug("raftnode: conf change dropped, retrying", "change", what, "peer", id)
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TransferLeadership asks raft to hand leadership to another voter and waits
// until it has moved or ctx ends. to = 0 picks the most up-to-date other
// voter that is active (bestTransferee), at each request. It returns ErrNotLeader if this node is not the leader when called,
// and nil once another node leads (normally to, but an election racing the
// transfer may pick another voter). raft abandons a transfer after an
// election timeout; it is then requested again.
func (n *Node) TransferLeadership(ctx context.Context, to uint64) error {
	timeout := time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval
	for first := true; ; first = false {
		changed := n.statusChanged()
		var err error
		var moved bool
		if derr := n.do(ctx, func() { moved, err = n.transferStep(to, first) }); derr != nil {
			return derr
		}
		if err != nil || moved {
			return err
		}
		t := time.NewTimer(timeout)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
		t.Stop()
	}
}

// transferStep runs on the loop: it reports whether leadership has left this
// node, or (re)requests the transfer.
func (n *Node) transferStep(to uint64, first bool) (moved bool, err error) {
	st := n.rn.Status()
	if st.RaftState != raft.StateLeader {
		if first {
			return false, ErrNotLeader
		}
		return st.Lead != 0 && st.Lead != n.id, nil
	}
	target := to
	if target == 0 {
		target = bestTransferee(n.confState.GetVoters(), st.Progress, func(id uint64) bool { return id != n.id })
	}
	if target == 0 || target == n.id || !slices.Contains(n.confState.GetVoters(), target) {
		return false, fmt.Errorf("%w (asked for %d)", ErrNoTransferTarget, to)
	}
	n.lg.Info("raftnode: transferring leadership", "to", target)
	n.rn.TransferLeader(target)
	return false, nil
}

// handOffIfUnlisted makes a leader that is not in Config.Voters transfer
// leadership to a voter that is. Membership comes from the log, so a
// controller left out of --controllers at a restart is still a voter and may
// win an election; but only listed nodes run a controller, and a raft leader
// without one would leave the cluster without an active controller. raft
// abandons a transfer after an election timeout; it is then requested again.
// Loop only.
func (n *Node) handOffIfUnlisted() {
	if _, listed := n.cfg.Voters[n.id]; listed {
		return
	}
	bs := n.rn.BasicStatus()
	if bs.RaftState != raft.StateLeader || bs.LeadTransferee != 0 {
		return
	}
	st := n.rn.Status()
	target := bestTransferee(n.confState.GetVoters(), st.Progress, func(id uint64) bool {
		_, listed := n.cfg.Voters[id]
		return listed && id != n.id
	})
	if target == 0 {
		return
	}
	n.lg.Warn("raftnode: leader is not in the controller list; transferring leadership", "to", target)
	n.rn.TransferLeader(target)
}

// bestTransferee picks, of the voters ok allows, the one with the highest
// match index among those the leader heard from within the last election
// timeout (raft's RecentActive, kept with CheckQuorum), or of all of them
// when none was: a voter that just died keeps its match index, and, the
// most up-to-date, would be asked again at every request while the
// transfer to it timed out. 0 if there is none; ties go to the first in
// voters.
func bestTransferee(voters []uint64, progress map[uint64]tracker.Progress, ok func(uint64) bool) uint64 {
	var target, best uint64
	active := false
	for _, id := range voters {
		pr, known := progress[id]
		if !known || !ok(id) {
			continue
		}
		better := target == 0 || (pr.RecentActive && !active) || (pr.RecentActive == active && pr.Match > best)
		if better {
			target, best, active = id, pr.Match, pr.RecentActive
		}
	}
	return target
}
