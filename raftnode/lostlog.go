package raftnode

import (
	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
)

// A voter whose raft storage was lost (disk replaced, data directory wiped)
// restarts with an empty log while the leader's progress for it still holds
// the match index it acknowledged before. etcd raft assumes a match index
// never goes back, which breaks two ways:
//
//   - the leader's heartbeat carries commit = min(match, commit), beyond the
//     follower's last index, and raft panics on it ("tocommit(n) is out of
//     range"): clampHeartbeat lowers it to the last index on disk, which is
//     always safe (a follower's commit index may lag; a heartbeat's commit
//     is never above what the follower acknowledged, so normally this
//     changes nothing);
//   - the leader never probes below match+1, so the follower can never catch
//     up while that leader lives (and while nothing new is proposed the
//     leader does not even send it an append). With the clamped heartbeat the
//     follower also queues a rejection (MsgAppResp, Reject, RejectHint = its
//     last index), sent once the Ready that follows is persisted; a leader
//     that sees a rejection hinting at a last index below the match index it
//     holds hands leadership to another voter (replaceLeaderForLostLog). The
//     new leader starts every follower's progress from scratch and probes
//     back to the follower's real log end. The rejection states only what is
//     true (this node lacks the entry at that index); raft itself ignores it
//     as stale.
//
// Neither step makes the follower safe to vote: see Config.RejoinGuard.

// clampHeartbeat lowers a heartbeat's commit index to this node's last
// index on disk and queues the rejection that tells the leader. Loop only.
func (n *Node) clampHeartbeat(m *pb.Message) {
	if m.GetType() != pb.MsgHeartbeat {
		return
	}
	last := n.st.lastIndex()
	if m.GetCommit() <= last {
		return
	}
	if n.lostLogWarned != m.GetFrom() {
		n.lostLogWarned = m.GetFrom()
		n.lg.Warn("raftnode: the leader believes this node holds entries it does not have (was its raft log lost?); ignoring the heartbeat's commit index",
			"leader", m.GetFrom(), "commit", m.GetCommit(), "last_index", last)
	}
	n.lostLogNotes = append(n.lostLogNotes, &pb.Message{
		Type:       pb.MsgAppResp.Enum(),
		From:       new(n.id),
		To:         new(m.GetFrom()),
		Term:       new(m.GetTerm()),
		Index:      new(m.GetCommit()),
		Reject:     new(true),
		RejectHint: new(last),
	})
	m.Commit = new(last)
}

// sendLostLogNotes sends the rejections clampHeartbeat queued; called after
// the Readys of an iteration are persisted (their term is then on disk).
// Loop only.
func (n *Node) sendLostLogNotes() {
	for _, m := range n.lostLogNotes {
		if m.GetTerm() == n.rn.BasicStatus().GetTerm() {
			n.send(m)
		}
	}
	n.lostLogNotes = n.lostLogNotes[:0]
}

// followerLostLog reports whether m, stepped on a leader, is a rejection
// from a follower whose log ends below the match index the leader holds for
// it (which only a lost log explains). Call it before stepping m. Loop only.
func (n *Node) followerLostLog(m *pb.Message) bool {
	if m.GetType() != pb.MsgAppResp || !m.GetReject() {
		return false
	}
	bs := n.rn.BasicStatus()
	if bs.RaftState != raft.StateLeader || m.GetTerm() != bs.GetTerm() {
		return false
	}
	pr, ok := n.rn.Status().Progress[m.GetFrom()]
	return ok && m.GetRejectHint() < pr.Match
}

// lostLogRetryTicks, in election timeouts, is how long a leader waits
// before it tries again the voters it already tried to hand leadership to
// for a follower that lost its log: each failed transfer drops proposals
// for up to an election timeout, so retrying at once blocked the metadata
// log for as long as no voter could take over.
const lostLogRetryTicks = 10

// replaceLeaderForLostLog hands leadership to the most up-to-date voter
// other than this node and lost (the follower that lost its log) that has
// been heard from within the last election timeout (a transfer to a dead
// node would only hold proposals up until raft abandons it); raft sends the
// transfer once that voter has the whole log. Loop only.
func (n *Node) replaceLeaderForLostLog(lost uint64) {
	bs := n.rn.BasicStatus()
	if bs.RaftState != raft.StateLeader || bs.LeadTransferee != 0 {
		return
	}
	st := n.rn.Status()
	pick := func() (target uint64) {
		var best uint64
		for _, id := range n.confState.GetVoters() {
			if id == n.id || id == lost || n.lostLogTried[id] {
				continue
			}
			_, listed := n.cfg.Voters[id]
			if pr, ok := st.Progress[id]; ok && listed && pr.RecentActive && (target == 0 || pr.Match > best) {
				target, best = id, pr.Match
			}
		}
		return target
	}
	// A voter tried before while this node is still leader did not take
	// over (it may be vote-guarded itself, see guard.go): try the others,
	// and the tried ones again only once every other voter has been tried.
	// An untried voter not heard from lately is waited for (raft resets
	// RecentActive when it abandons a transfer, so right then the live
	// voters may not count yet).
	target := pick()
	if target == 0 && len(n.lostLogTried) > 0 {
		for _, id := range n.confState.GetVoters() {
			if _, listed := n.cfg.Voters[id]; listed && id != n.id && id != lost && !n.lostLogTried[id] {
				return
			}
		}
		// Every voter was tried and none took over: a failed transfer holds
		// proposals up for an election timeout, so try again only after
		// lostLogRetryTicks (a voter that is itself vote-guarded may stay so
		// for long, e.g. until this follower catches up and answers it).
		if n.ticks < n.lostLogRetry {
			return
		}
		n.lostLogRetry = n.ticks + uint64(lostLogRetryTicks*n.cfg.ElectionTicks)
		clear(n.lostLogTried)
		target = pick()
	}
	if target == 0 {
		if n.lostLogStuck == lost {
			return // warned already (rejections come with every heartbeat)
		}
		n.lostLogStuck = lost
		n.lg.Warn("raftnode: a follower lost its raft log and cannot catch up from this leader; no other live voter to hand leadership to",
			"peer", lost, "match", st.Progress[lost].Match)
		return
	}
	n.lostLogStuck = 0
	if n.lostLogTried == nil {
		n.lostLogTried = map[uint64]bool{}
	}
	n.lostLogTried[target] = true
	n.lg.Warn("raftnode: a follower lost its raft log; handing leadership to another voter so that it can catch up",
		"peer", lost, "match", st.Progress[lost].Match, "to", target)
	n.rn.TransferLeader(target)
}
