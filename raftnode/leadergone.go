package raftnode

import (
	"context"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"

	"paymentlog/internal/portprobe"
)

// A leader whose process is gone: the election need not wait out the whole
// timeout.
//
// A follower elects a new leader only after ElectionTicks..2*ElectionTicks-1
// ticks without a message from the current one, and with CheckQuorum a
// voter that heard from the leader within ElectionTicks ignores every vote
// request (the leader lease). When the leader's process died on a host that
// is still up, its UDP port has no socket behind it and the host refuses a
// probe (internal/portprobe). A follower that has not heard from its leader
// for LeaderProbeTicks probes the leader's address; if the probe, sent after
// the last message it had from that leader, is refused and the leader is
// still the same, the follower ticks raft on to ElectionTicks since that
// message: past the lease, so it grants votes, and from there its
// randomized timeout (0..ElectionTicks-1 more ticks) starts the election as
// usual. The voter with the lowest id but the dead leader's does not wait
// for that rest: one tick after it skipped the lease (the others find the
// port closed within a few ms of it and skip theirs meanwhile), it
// campaigns. Alone, it wins at once; if its pre-vote finds the others
// still in the lease, or it is behind, it got nothing and its own timeout
// still runs as before (a pre-vote resets no one's timer), and so do the
// others'. While it is a pre-candidate of that campaign (or of raft's own,
// begun within the skip), it drops another voter's pre-vote request unless
// that voter's log is ahead: two pre-candidates would grant each other and
// split the vote (firstSurvivorIgnores). Raft's safety never rests on
// timing; this only moves the moment the survivors start the election they
// would have started anyway. A stopped process keeps its socket and a dead
// host or partition answers nothing: the election timeout decides as
// before.
//
// Fields below are owned by the Ready loop (heardAt is also read off it).
type leaderWatch struct {
	// heard is the tick (Node.ticks) at which the last message from the
	// current leader was stepped, or the leader became known.
	heard uint64
	// heardAt is when that was, by the wall clock, in Unix nanoseconds:
	// a probe is given it (a port found closed after it counts), and
	// FollowedLeader reads it off the loop.
	heardAt atomic.Int64
	// probing: a probe of the leader's port is in flight.
	probing bool
	// skipped is the leader whose lease this node skipped (once per
	// leader: the randomized rest of the timeout is left to run).
	skipped uint64
	// campaignAt is the tick at which this node, the first survivor,
	// campaigns (0: none due).
	campaignAt uint64
	// recampaigns is how many more ticks the first survivor, still a
	// pre-candidate with no leader, starts its pre-vote again: the other
	// survivor may have skipped the dead leader's lease a tick after this
	// one campaigned, and refused it; raft alone would wait out a whole
	// randomized election timeout. Kept across the leader change to none
	// that the campaign itself makes.
	recampaigns int
}

// watchNewLeader starts the watch afresh for a new leader. Loop only.
func (n *Node) watchNewLeader() {
	if n.lead != 0 {
		n.lw.recampaigns = 0
	}
	n.lw.heard, n.lw.skipped, n.lw.campaignAt = n.ticks, 0, 0
	n.lw.heardAt.Store(time.Now().UnixNano())
}

// heardFrom notes a message from the current leader. Loop only.
func (n *Node) heardFrom(from uint64) {
	if from != 0 && from == n.lead {
		n.lw.heard = n.ticks
		n.lw.heardAt.Store(time.Now().UnixNano())
	}
}

// FollowedLeader is the leader this node's raft follows (Status.Leader),
// or 0 when that is another node not heard from for longer than the
// election timeout (ElectionTicks ticks). A voter's raft forgets such a
// leader itself when it campaigns; a learner never campaigns, and would
// name a leader it no longer hears for as long as it hears nothing.
func (n *Node) FollowedLeader() uint64 {
	n.mu.Lock()
	lead := n.mu.status.Leader
	n.mu.Unlock()
	if lead == 0 || lead == n.id {
		return lead
	}
	timeout := time.Duration(n.cfg.ElectionTicks) * n.cfg.TickInterval
	if time.Since(time.Unix(0, n.lw.heardAt.Load())) > timeout {
		return 0
	}
	return lead
}

// watchLeader probes the leader's port once it has been silent for
// LeaderProbeTicks (none in flight, and a follower only). Loop only, after
// each tick.
func (n *Node) watchLeader() {
	if n.cfg.LeaderProbe == nil || n.lead == 0 || n.lead == n.id || n.lw.probing || n.lw.skipped == n.lead ||
		n.ticks-n.lw.heard < uint64(n.cfg.LeaderProbeTicks) {
		return
	}
	addr := n.peers.addr(n.lead)
	if addr == "" {
		return
	}
	lead, sent, since := n.lead, n.ticks, time.Unix(0, n.lw.heardAt.Load())
	n.lw.probing = true
	n.hooks.add(1)
	go func() {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-n.stopc:
				cancel()
			case <-ctx.Done():
			}
		}()
		res, err := n.cfg.LeaderProbe(ctx, addr, since)
		cancel()
		if err != nil {
			n.lg.Debug("raftnode: probe of the leader's port failed", "leader", lead, "addr", addr, "err", err)
		}
		select {
		case n.opc <- func() { n.leaderProbed(lead, sent, res) }:
		case <-n.donec:
			n.hooks.add(-1)
		}
	}()
}

// leaderProbed takes the result of a probe of leader lead's port sent at
// tick sent. Loop only.
func (n *Node) leaderProbed(lead, sent uint64, res portprobe.Result) {
	defer n.hooks.add(-1)
	n.lw.probing = false
	if !res.IsClosed() || lead != n.lead || n.lw.heard > sent {
		return
	}
	silent := n.ticks - n.lw.heard
	n.lg.Info("raftnode: the leader is silent and its port found closed (its process is gone); skipping the rest of its lease",
		"leader", lead, "silent_ticks", silent, "found_by", res.FoundBy())
	for i := silent; i < uint64(n.cfg.ElectionTicks); i++ {
		n.rn.Tick()
	}
	n.lw.skipped = lead
	if n.firstSurvivor(lead) {
		if n.rn.BasicStatus().RaftState == raft.StatePreCandidate {
			// Raft's own election started within the skip (its randomized
			// timeout drew ElectionTicks): it counts as this node's
			// campaign (firstSurvivorIgnores, recampaigns).
			n.lw.recampaigns = firstSurvivorRecampaigns
		} else {
			n.lw.campaignAt = n.ticks + 1
		}
	}
	if fn := n.leaderGone.Load(); fn != nil {
		(*fn)(lead)
	}
}

// firstSurvivor reports whether this node is the voter with the lowest id
// but the dead leader's (in the configuration it applied). Loop only.
func (n *Node) firstSurvivor(dead uint64) bool {
	first := uint64(0)
	for _, id := range n.confState.GetVoters() {
		if id != dead && (first == 0 || id < first) {
			first = id
		}
	}
	return first == n.id
}

// campaignIfDue makes the first survivor campaign at campaignAt, unless
// raft moved on meanwhile (a new leader, or its own campaign: either
// changes n.lead) or the rejoin guard is on (its vote requests would be
// dropped). Loop only, after each tick.
func (n *Node) campaignIfDue() {
	if n.lw.recampaigns > 0 {
		n.lw.recampaigns--
		if n.lead == 0 && !n.guard.on && n.rn.BasicStatus().RaftState == raft.StatePreCandidate {
			if err := n.rn.Campaign(); err != nil {
				n.lg.Debug("raftnode: campaign refused", "err", err)
			}
		}
		return
	}
	if n.lw.campaignAt == 0 || n.ticks < n.lw.campaignAt {
		return
	}
	n.lw.campaignAt = 0
	if n.lead != n.lw.skipped || n.guard.on {
		return
	}
	n.lg.Info("raftnode: campaigning at once, the first survivor of a leader whose process is gone", "leader", n.lead)
	if err := n.rn.Campaign(); err != nil {
		n.lg.Debug("raftnode: campaign refused", "err", err)
	}
	n.lw.recampaigns = firstSurvivorRecampaigns
}

// firstSurvivorIgnores reports whether m, another voter's pre-vote request,
// is dropped: this node, the first survivor, is a pre-candidate of its own
// campaign (campaignIfDue, for recampaigns more ticks) and the other's log
// is no more up to date than its own (as far as its storage shows). Two
// pre-candidates with equal logs grant each other, both become candidates
// in the same term, each votes for itself, and the vote splits: the
// election waits a whole randomized timeout more. That happens when the
// other survivor's randomized timeout ran out right as it skipped the lease
// (one time in ElectionTicks). Dropped, the other's request is a lost
// message to raft; this node's pre-vote wins the other's grant, and its
// vote request, in a higher term, the other's vote. A request from a
// voter whose log is ahead is stepped: this node could not win then.
// Loop only.
func (n *Node) firstSurvivorIgnores(m *pb.Message) bool {
	if m.GetType() != pb.MsgPreVote || n.lw.recampaigns == 0 || n.rn.BasicStatus().RaftState != raft.StatePreCandidate {
		return false
	}
	last := n.st.lastIndex()
	term, err := n.st.Term(last)
	if err != nil {
		return false
	}
	if m.GetLogTerm() < term || (m.GetLogTerm() == term && m.GetIndex() <= last) {
		n.lg.Debug("raftnode: ignoring a pre-vote request while campaigning as the first survivor", "from", m.GetFrom())
		return true
	}
	return false
}

// firstSurvivorRecampaigns bounds recampaigns: a pre-vote changes no term,
// so a few more cost only messages.
const firstSurvivorRecampaigns = 3

// OnLeaderGone sets fn to be told the id of a leader whose port refused
// this follower's probe (its process is gone), on the Ready loop: fn must
// not block. The controller that this node may become takes it as the
// replaced controller's broker found dead (node/controller/probe.go), since
// each node's raft and broker share one address; its own probe could come
// too late, the dead host's kernel limiting the ICMP errors it sends each
// peer (the peers' traffic to the dead port draws on them too).
func (n *Node) OnLeaderGone(fn func(id uint64)) { n.leaderGone.Store(&fn) }
