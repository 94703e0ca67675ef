package raftnode

import (
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"
)

// SnapshotChecker is implemented by a StateMachine that can tell whether
// Restore would accept a snapshot without restoring it: a format version it
// does not read (after an upgrade of the leader), contents it rejects.
//
// A snapshot from the leader is checked before raft sees it. A refused one
// is dropped: nothing is persisted, the state machine and raft keep the
// node's previous state, the node keeps running (behind: the leader sends
// the snapshot again while its log cannot catch the node up), and Status
// names the refusal. Without the check, raft accepted such a snapshot, it
// was written to disk, Restore failed and the node stopped, and every
// restart failed on the snapshot it had written.
type SnapshotChecker interface {
	CheckSnapshot(index uint64, data []byte) error
}

// checkSnapshot reports why snap must not be installed: its envelope does
// not decode, or the state machine (a SnapshotChecker) refuses its data.
// Loop only.
func (n *Node) checkSnapshot(snap *pb.Snapshot) error {
	md := snap.GetMetadata()
	d, err := decodeSnapshotData(snap.GetData())
	if err == nil {
		if c, ok := n.cfg.SM.(SnapshotChecker); ok {
			err = c.CheckSnapshot(md.GetIndex(), d.sm)
		}
	}
	if err != nil {
		return fmt.Errorf("raftnode: refusing snapshot %d (epoch %d): %w", md.GetIndex(), md.GetTerm(), err)
	}
	return nil
}

// stepSnapshot checks a MsgSnap before stepping it (see SnapshotChecker)
// and reports whether it may be stepped. Loop only.
func (n *Node) stepSnapshot(m *pb.Message) bool {
	err := n.checkSnapshot(m.GetSnapshot())
	if err == nil {
		return true
	}
	idx := m.GetSnapshot().GetMetadata().GetIndex()
	if n.refused.index != idx || n.refused.err == nil {
		n.lg.Error("raftnode: snapshot from the leader refused; keeping the previous state", "from", m.GetFrom(), "offset", idx, "err", err)
	} else {
		n.lg.Debug("raftnode: snapshot from the leader refused again", "from", m.GetFrom(), "offset", idx)
	}
	n.refused.index, n.refused.err = idx, err
	return false
}
