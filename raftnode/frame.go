package raftnode

import (
	"errors"
	"fmt"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"paymentlog/quic"
)

// FrameType is the quic frame type of raft peer streams. It must equal
// wire.TypeRaftMessage (raftnode does not import wire; a test checks).
const FrameType quic.FrameType = 24

// raftFrame is the msgpack body of every frame on a raft peer stream (the
// first frame opens the stream). Part of the wire format:
//
//	from  uint64   sender's raft id
//	to    uint64   receiver's raft id (a receiver rejects frames for another id)
//	msgs  [][]byte raftpb.Message, protobuf-encoded, in send order
type raftFrame struct {
	From uint64   `msgpack:"from"`
	To   uint64   `msgpack:"to"`
	Msgs [][]byte `msgpack:"msgs"`
}

// maxFrameMsgs bounds the messages in one frame.
const maxFrameMsgs = 4096

var (
	errWrongNode  = errors.New("raftnode: frame addressed to another node")
	errBadMessage = errors.New("raftnode: malformed raft message")
)

// decodeFrameMessages unmarshals and checks the messages of a frame sent by
// f.From to self. It fails on a frame not addressed to self; a malformed
// message fails the whole frame (the stream is closed, raft retransmits).
func decodeFrameMessages(f *raftFrame, self uint64) ([]*pb.Message, error) {
	if f.To != self {
		return nil, fmt.Errorf("%w: to %d, this is %d", errWrongNode, f.To, self)
	}
	if f.From == 0 || f.From == self {
		return nil, fmt.Errorf("%w: from %d", errBadMessage, f.From)
	}
	if len(f.Msgs) > maxFrameMsgs {
		return nil, fmt.Errorf("%w: %d messages in one frame", errBadMessage, len(f.Msgs))
	}
	out := make([]*pb.Message, 0, len(f.Msgs))
	for _, b := range f.Msgs {
		m := &pb.Message{}
		if err := proto.Unmarshal(b, m); err != nil {
			return nil, fmt.Errorf("%w: %v", errBadMessage, err)
		}
		if err := checkMessage(m, f.From, self); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// checkMessage rejects messages raft would mis-handle or panic on: raft
// trusts its peers, we check what a broken peer could send.
func checkMessage(m *pb.Message, from, self uint64) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s %s", errBadMessage, m.GetType(), fmt.Sprintf(format, args...))
	}
	if m.GetTo() != self || m.GetFrom() != from {
		return bad("from %d to %d on a stream from %d to %d", m.GetFrom(), m.GetTo(), from, self)
	}
	t := m.GetType()
	if _, known := pb.MessageType_name[int32(t)]; !known || raft.IsLocalMsg(t) {
		return bad("is not a peer message")
	}
	if len(m.GetResponses()) > 0 {
		return bad("carries responses")
	}
	prev, prevTerm := m.GetIndex(), m.GetLogTerm()
	for _, e := range m.GetEntries() {
		switch e.GetType() {
		case pb.EntryNormal, pb.EntryConfChange, pb.EntryConfChangeV2:
		default:
			return bad("entry type %d", e.GetType())
		}
		if t == pb.MsgApp {
			if e.GetIndex() != prev+1 || e.GetTerm() < prevTerm || e.GetTerm() > m.GetTerm() {
				return bad("entry %d/%d after %d/%d in term %d", e.GetIndex(), e.GetTerm(), prev, prevTerm, m.GetTerm())
			}
			prev, prevTerm = e.GetIndex(), e.GetTerm()
		}
	}
	if t == pb.MsgSnap {
		md := m.GetSnapshot().GetMetadata()
		if md.GetIndex() == 0 || md.GetTerm() == 0 || md.GetTerm() > m.GetTerm() {
			return bad("snapshot %d/%d in term %d", md.GetIndex(), md.GetTerm(), m.GetTerm())
		}
		// Installed, a snapshot is written to disk before it is applied: one
		// whose envelope does not decode would stop the node at once and at
		// every restart.
		if _, err := decodeSnapshotData(m.GetSnapshot().GetData()); err != nil {
			return bad("snapshot %d: %v", md.GetIndex(), err)
		}
	}
	return nil
}
