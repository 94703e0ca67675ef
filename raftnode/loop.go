package raftnode

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"paymentlog/segment"
)

// maxDrain bounds the inputs handled before the next Ready, so that one
// Ready (one fsync) covers many messages and proposals under load.
const maxDrain = 64

// iteration collects what one pass of the loop must acknowledge after its Ready.
type iteration struct {
	props []*proposal
	acks  []chan struct{}
	dones []func()
}

// run is the Ready loop. It owns the RawNode and the storage: every input
// (ticks, peer messages, proposals, operations) is applied to the RawNode
// here, then each Ready is handled exactly as raft's doc.go asks, in order:
//
//  1. persist the snapshot, the entries (discarding conflicting ones) and
//     the hard state, with fsync when Ready.MustSync;
//  2. only then send the messages;
//  3. apply the snapshot and the committed entries to the state machine
//     (ApplyConfChange for conf changes);
//  4. Advance.
//
// raft's asynchronous storage writes mode is not used.
func (n *Node) run() {
	defer close(n.donec)
	var tickC <-chan time.Time
	if !n.cfg.ManualTick {
		t := time.NewTicker(n.cfg.TickInterval)
		defer t.Stop()
		tickC = t.C
	}
	for {
		if n.stall != nil {
			if n.runStalled() {
				return
			}
			continue
		}
		var it iteration
		select {
		case <-n.stopc:
			n.stop(nil)
			return
		case <-tickC:
			n.tick()
		case ack := <-n.tickc:
			n.tick()
			it.acks = append(it.acks, ack)
		case in := <-n.recvc:
			n.step(in, &it)
		case p := <-n.propc:
			it.props = append(it.props, p)
		case op := <-n.opc:
			op()
		case r := <-n.reportc:
			n.handleReport(r)
		}
		n.drain(&it)
		err := n.process(&it)
		if err == nil {
			err = n.fatal // an operation's (scrub.go)
		}
		for _, done := range it.dones {
			done()
		}
		for _, ack := range it.acks {
			close(ack)
		}
		if err != nil {
			n.lg.Error("raftnode: stopping after a storage failure", "err", err)
			if errors.Is(err, segment.ErrScrubCorrupt) {
				n.recordScrubLogEnd() // for the repair: scrub_logend.go
			}
			n.stop(err)
			return
		}
	}
}

// drain takes more waiting peer messages and proposals without blocking.
func (n *Node) drain(it *iteration) {
	for range maxDrain {
		select {
		case in := <-n.recvc:
			n.step(in, it)
		case p := <-n.propc:
			it.props = append(it.props, p)
		default:
			return
		}
	}
}

// process steps the proposals and handles every Ready until none is left.
func (n *Node) process(it *iteration) error {
	local := n.stepProposals(it.props)
	for n.stall == nil && n.rn.HasReady() {
		if err := n.handleReady(local); err != nil {
			return err
		}
		local = nil
	}
	if n.stall != nil {
		// Nothing more until the stalled Ready is persisted.
		n.publishStatus()
		n.pending.flush()
		return nil
	}
	n.sendLostLogNotes()
	if err := n.maybeLiftGuard(); err != nil {
		return err
	}
	n.handOffIfUnlisted()
	n.publishStatus()
	n.pending.flush()
	return nil
}

func (n *Node) step(in inbound, it *iteration) {
	if in.done != nil {
		it.dones = append(it.dones, in.done)
	}
	for _, m := range in.msgs {
		if n.guardIgnores(m) || n.firstSurvivorIgnores(m) {
			continue
		}
		if m.GetType() == pb.MsgSnap && !n.stepSnapshot(m) {
			continue
		}
		n.clampHeartbeat(m)
		n.heardFrom(m.GetFrom())
		lost := n.followerLostLog(m)
		if err := n.rn.Step(m); err != nil {
			n.lg.Debug("raftnode: step", "type", m.GetType(), "from", m.GetFrom(), "err", err)
		}
		if lost {
			n.replaceLeaderForLostLog(m.GetFrom())
		}
	}
}

// stepProposals hands the proposals to raft as one MsgProp. It returns them
// if this node is the leader (raft has then appended them at the end of its
// log, see pendingSet.locate); a follower forwards them to the leader.
func (n *Node) stepProposals(props []*proposal) []*proposal {
	if len(props) == 0 {
		return nil
	}
	ents := make([]*pb.Entry, len(props))
	for i, p := range props {
		ents[i] = p.entry
	}
	leader := n.rn.BasicStatus().RaftState == raft.StateLeader
	err := n.rn.Step(&pb.Message{Type: pb.MsgProp.Enum(), From: new(n.id), Entries: ents})
	if err != nil {
		for _, p := range props {
			p.done <- proposeResult{err: ErrProposalDropped}
		}
		return nil
	}
	for _, p := range props {
		n.pending.add(p)
	}
	if leader {
		return props
	}
	return nil
}

// handleReady handles one Ready (see run).
func (n *Node) handleReady(local []*proposal) error {
	rd := n.rn.Ready()
	n.pending.locate(local, rd.Entries)
	if err := n.persist(rd); err != nil {
		if isDiskFull(err) {
			n.stallOn(rd, err)
			return nil
		}
		return err
	}
	return n.afterPersist(rd)
}

// persist is step 1 of handleReady. A step that fails for lack of space
// leaves what it wrote in a state that persisting rd again completes (see
// diskStorage.append), so a stalled Ready is persisted again whole.
func (n *Node) persist(rd raft.Ready) error {
	ctx := context.Background()
	// 1. Persist. A snapshot was checked when its message was stepped; it
	// is checked again before it is written, so that one the state machine
	// would refuse stops the node with its previous state still on disk.
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.checkSnapshot(rd.Snapshot); err != nil {
			return err
		}
		if err := n.st.installSnapshot(ctx, rd.Snapshot); err != nil {
			return err
		}
		n.refused.err = nil
	}
	if err := n.st.append(ctx, rd.Entries); err != nil {
		return err
	}
	if rd.MustSync {
		if err := n.st.sync(ctx); err != nil {
			return err
		}
	}
	return n.st.setHardState(rd.HardState)
}

// afterPersist is steps 2 to 4 of handleReady, once rd is persisted.
func (n *Node) afterPersist(rd raft.Ready) error {
	ctx := context.Background()
	// 2. Send.
	for _, m := range rd.Messages {
		if !n.guardDrops(m) {
			n.send(m)
		}
	}

	// 3. Apply.
	if !raft.IsEmptySnap(rd.Snapshot) {
		if err := n.restoreSnapshot(rd.Snapshot); err != nil {
			return err
		}
	}
	for _, e := range rd.CommittedEntries {
		if err := n.applyEntry(e); err != nil {
			return err
		}
	}

	// 4. Advance.
	n.rn.Advance(rd)

	if rd.SoftState != nil && rd.SoftState.Lead != n.lead {
		n.leaderChanged(rd.SoftState.Lead)
	}
	if err := n.maybeSnapshot(ctx); err != nil {
		if !isDiskFull(err) {
			return err
		}
		// A snapshot is an optimisation: the log still holds everything.
		// It is tried again after the next SnapshotEvery entries.
		n.lg.Warn("raftnode: disk full; metadata snapshot not taken", "err", err)
	}
	return nil
}

// send marshals m here, in the loop (raft's messages alias its log), and
// queues it for its peer.
func (n *Node) send(m *pb.Message) {
	if n.hooks != nil && n.hooks.queued != nil {
		n.hooks.queued(n.id, m)
	}
	to := m.GetTo()
	snap := m.GetType() == pb.MsgSnap
	data, err := proto.Marshal(m)
	if err == nil && n.peers.send(to, outMsg{data: data, snap: snap}) {
		return
	}
	if err != nil {
		n.lg.Error("raftnode: marshal message", "type", m.GetType(), "err", err)
	}
	n.rn.ReportUnreachable(to)
	if snap {
		n.rn.ReportSnapshot(to, raft.SnapshotFailure)
	}
}

func (n *Node) handleReport(r peerReport) {
	switch r.kind {
	case reportUnreachable:
		n.rn.ReportUnreachable(r.id)
	case reportSnapOK:
		n.rn.ReportSnapshot(r.id, raft.SnapshotFinish)
	case reportSnapFailed:
		n.rn.ReportSnapshot(r.id, raft.SnapshotFailure)
	}
}

// tick advances raft's clock by one tick, then the watch of a silent
// leader (leadergone.go). Loop only.
func (n *Node) tick() {
	n.rn.Tick()
	n.ticks++
	n.watchLeader()
	n.campaignIfDue()
}

// leaderChanged fails the proposals still waiting: a new leader may have
// discarded them (see Propose), then announces the change.
func (n *Node) leaderChanged(lead uint64) {
	n.lg.Info("raftnode: leader changed", "from", n.lead, "leader", lead, "epoch", n.rn.BasicStatus().GetTerm())
	n.lead = lead
	n.watchNewLeader()
	clear(n.lostLogTried) // a new leadership tries every voter afresh
	n.pending.fail(ErrProposalDropped)
	n.publishStatus()
	select {
	case n.leaderc <- lead:
	default:
		select { // replace the stale value
		case <-n.leaderc:
		default:
		}
		select {
		case n.leaderc <- lead:
		default:
		}
	}
}

// stop ends the loop: every waiting proposal fails.
func (n *Node) stop(cause error) {
	err := error(ErrStopped)
	if cause != nil {
		n.mu.Lock()
		n.mu.err = cause
		n.mu.Unlock()
		err = fmt.Errorf("%w: %w", ErrStopped, cause)
	}
	n.pending.fail(err)
	n.publishStatus()
	n.pending.flush()
}
