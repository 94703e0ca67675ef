package raftnode

import (
	"context"
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// applyEntry applies one committed entry: normal entries go to the state
// machine, conf changes to raft (ApplyConfChange) and to the peer addresses.
// A committed entry that does not decode is fatal: every node holds the same
// bytes, so skipping it would hide a bug, not tolerate bad input.
func (n *Node) applyEntry(e *pb.Entry) error {
	idx := e.GetIndex()
	if idx <= n.applied {
		return nil // already in the restored snapshot
	}
	switch e.GetType() {
	case pb.EntryNormal:
		if len(e.GetData()) == 0 { // a new leader's empty entry
			n.pending.applied(idx, proposalID{}, false)
			break
		}
		id, payload, err := decodeEnvelope(e.GetData())
		if err != nil {
			return fmt.Errorf("raftnode: committed entry %d: %w", idx, err)
		}
		n.cfg.SM.Apply(idx, payload)
		n.pending.applied(idx, id, true)
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("raftnode: committed conf change %d: %w", idx, err)
		}
		n.confState = n.rn.ApplyConfChange(&cc)
		id, ok := n.confChangeContext(cc.GetContext(), func(addr string) {
			switch cc.GetType() {
			case pb.ConfChangeAddNode, pb.ConfChangeAddLearnerNode:
				n.learnAddr(cc.GetNodeId(), addr)
			}
		})
		if cc.GetType() == pb.ConfChangeRemoveNode {
			n.peers.remove(cc.GetNodeId())
		}
		n.lg.Info("raftnode: applied conf change", "offset", idx, "type", cc.GetType(), "peer", cc.GetNodeId(),
			"voters", n.confState.GetVoters(), "learners", n.confState.GetLearners())
		n.pending.applied(idx, id, ok)
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.GetData(), &cc); err != nil {
			return fmt.Errorf("raftnode: committed conf change %d: %w", idx, err)
		}
		n.confState = n.rn.ApplyConfChange(&cc)
		id, ok := n.confChangeContext(cc.GetContext(), nil)
		n.lg.Info("raftnode: applied conf change v2", "offset", idx,
			"voters", n.confState.GetVoters(), "learners", n.confState.GetLearners())
		n.pending.applied(idx, id, ok)
	default:
		return fmt.Errorf("raftnode: committed entry %d has unknown type %d", idx, e.GetType())
	}
	n.applied = idx
	return nil
}

// confChangeContext decodes a conf change's context (see envelope.go) and
// passes the address to setAddr. Conf changes proposed by other tools may
// carry no context.
func (n *Node) confChangeContext(ctx []byte, setAddr func(string)) (proposalID, bool) {
	if len(ctx) == 0 {
		return proposalID{}, false
	}
	id, addr, err := decodeEnvelope(ctx)
	if err != nil {
		n.lg.Warn("raftnode: conf change context", "err", err)
		return proposalID{}, false
	}
	if setAddr != nil && len(addr) > 0 && len(addr) <= maxAddrLen {
		setAddr(string(addr))
	}
	return id, id != proposalID{}
}

// learnAddr records a peer address found in the metadata log or a snapshot.
// Such addresses are history: for a voter, the address given in
// Config.Voters (--controllers, the operator's current list) wins, so that a
// controller that moved is reached at its new address once the nodes restart
// with the new list, instead of at the one its bootstrap entry or an old
// snapshot remembers.
func (n *Node) learnAddr(id uint64, addr string) {
	if cur, ok := n.cfg.Voters[id]; ok && cur != "" {
		if cur != addr {
			n.lg.Debug("raftnode: keeping the configured address of a voter", "peer", id, "addr", cur, "logged", addr)
		}
		return
	}
	n.peers.setAddr(id, addr)
}

// restoreSnapshot replaces the state machine with a snapshot received from
// the leader (already persisted). Waiting proposals fail: whether they are
// in the snapshot cannot be told.
func (n *Node) restoreSnapshot(snap *pb.Snapshot) error {
	if err := n.restore(snap); err != nil {
		return err
	}
	n.pending.fail(ErrProposalDropped)
	return nil
}

// restoreFromStorage restores the state machine from the snapshot on disk, if any.
func (n *Node) restoreFromStorage() error {
	if n.st.snapshotIndex() == 0 {
		return nil
	}
	return n.restore(n.st.snap)
}

func (n *Node) restore(snap *pb.Snapshot) error {
	md := snap.GetMetadata()
	d, err := decodeSnapshotData(snap.GetData())
	if err != nil {
		return fmt.Errorf("raftnode: snapshot %d: %w", md.GetIndex(), err)
	}
	if err := n.cfg.SM.Restore(md.GetIndex(), d.sm); err != nil {
		return fmt.Errorf("raftnode: restore snapshot %d: %w", md.GetIndex(), err)
	}
	for id, addr := range d.peers {
		n.learnAddr(id, addr)
	}
	n.confState = proto.Clone(md.GetConfState()).(*pb.ConfState)
	n.applied = md.GetIndex()
	n.lg.Info("raftnode: restored snapshot", "offset", md.GetIndex(), "epoch", md.GetTerm(),
		"voters", n.confState.GetVoters(), "learners", n.confState.GetLearners())
	return nil
}

// maybeSnapshot snapshots the state machine every SnapshotEvery applied
// entries and compacts the log, keeping CatchUpEntries entries behind the
// snapshot for followers that lag a little.
//
// It also snapshots as soon as a conf change has been applied since the
// last snapshot: a node added to the group (a broker-only learner) after
// the log was compacted can only catch up from a snapshot, and raft refuses
// to restore one whose ConfState does not list it ("not in the ConfState"),
// so with only the older snapshot to send it would wait SnapshotEvery more
// entries.
func (n *Node) maybeSnapshot(ctx context.Context) error {
	if n.applied < n.snapRetry {
		return nil
	}
	confChanged := n.st.snapshotIndex() > 0 && n.applied > n.st.snapshotIndex() &&
		!proto.Equal(n.st.snap.GetMetadata().GetConfState(), n.confState)
	if n.applied < n.st.snapshotIndex()+n.cfg.SnapshotEvery && !confChanged {
		return nil
	}
	data, err := n.cfg.SM.Snapshot()
	if err != nil {
		return fmt.Errorf("raftnode: state machine snapshot at %d: %w", n.applied, err)
	}
	addrs := n.peers.addrs()
	if n.cfg.Addr != "" {
		addrs[n.id] = n.cfg.Addr
	}
	env := encodeSnapshotData(snapshotData{peers: addrs, sm: data})
	snap, err := n.st.createSnapshot(n.applied, proto.Clone(n.confState).(*pb.ConfState), env)
	if err != nil {
		// Not again for a while (a full disk refuses it every time).
		n.snapRetry = n.applied + max(1, n.cfg.SnapshotEvery/8)
		return err
	}
	idx := snap.GetMetadata().GetIndex()
	n.lg.Info("raftnode: snapshot taken", "offset", idx, "epoch", snap.GetMetadata().GetTerm(), "bytes", len(env))
	if idx > n.cfg.CatchUpEntries {
		return n.st.compact(ctx, idx-n.cfg.CatchUpEntries+1)
	}
	return nil
}
