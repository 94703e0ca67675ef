package raftnode

import (
	"strings"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// DecodeDumpRecord reads back what the entry log writes: a normal entry's
// proposer and payload, raft's no-op, both conf change kinds, and refuses
// a bad key or envelope.
func TestDecodeDumpRecord(t *testing.T) {
	normal := &pb.Entry{Type: pb.EntryNormal.Enum(), Term: new(uint64(7)), Index: new(uint64(12)),
		Data: encodeEnvelope(proposalID{node: 3, seq: 99}, []byte("records"))}
	d, err := DecodeDumpRecord(12, encodeEntryKey(normal), normal.Data)
	if err != nil || d.Term != 7 || d.Type != "EntryNormal" || d.Proposer != 3 || string(d.Payload) != "records" {
		t.Fatalf("normal: %+v, %v", d, err)
	}
	noop := &pb.Entry{Type: pb.EntryNormal.Enum(), Term: new(uint64(8))}
	if d, err := DecodeDumpRecord(13, encodeEntryKey(noop), nil); err != nil || d.Payload != nil || d.Proposer != 0 {
		t.Fatalf("no-op: %+v, %v", d, err)
	}
	cc, _ := proto.Marshal(&pb.ConfChange{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: new(uint64(4))})
	ccE := &pb.Entry{Type: pb.EntryConfChange.Enum(), Term: new(uint64(8))}
	if d, err := DecodeDumpRecord(14, encodeEntryKey(ccE), cc); err != nil || d.ConfChange != "ConfChangeAddLearnerNode node 4" {
		t.Fatalf("conf change: %+v, %v", d, err)
	}
	cc2, _ := proto.Marshal(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{
		{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(uint64(1))}, {Type: pb.ConfChangeRemoveNode.Enum(), NodeId: new(uint64(5))}}})
	cc2E := &pb.Entry{Type: pb.EntryConfChangeV2.Enum(), Term: new(uint64(8))}
	if d, err := DecodeDumpRecord(15, encodeEntryKey(cc2E), cc2); err != nil || d.ConfChange != "ConfChangeAddNode node 1, ConfChangeRemoveNode node 5" {
		t.Fatalf("conf change v2: %+v, %v", d, err)
	}
	if _, err := DecodeDumpRecord(16, []byte{9}, nil); err == nil {
		t.Fatal("a bad key decoded")
	}
	if _, err := DecodeDumpRecord(17, encodeEntryKey(normal), []byte{0xff, 1}); err == nil {
		t.Fatal("a bad envelope decoded")
	}
}

// FuzzDecodeDumpRecord: any key and value from a damaged metadata log
// decode or fail, never panic, and a decoded normal entry's payload is the
// tail of the value.
func FuzzDecodeDumpRecord(f *testing.F) {
	normal := &pb.Entry{Type: pb.EntryNormal.Enum(), Term: new(uint64(7))}
	f.Add(encodeEntryKey(normal), encodeEnvelope(proposalID{node: 3, seq: 99}, []byte("records")))
	cc, _ := proto.Marshal(&pb.ConfChange{Type: pb.ConfChangeAddNode.Enum(), NodeId: new(uint64(2))})
	f.Add(encodeEntryKey(&pb.Entry{Type: pb.EntryConfChange.Enum(), Term: new(uint64(1))}), cc)
	cc2, _ := proto.Marshal(&pb.ConfChangeV2{Changes: []*pb.ConfChangeSingle{{Type: pb.ConfChangeAddLearnerNode.Enum(), NodeId: new(uint64(4))}}})
	f.Add(encodeEntryKey(&pb.Entry{Type: pb.EntryConfChangeV2.Enum(), Term: new(uint64(1))}), cc2)
	f.Add([]byte{1, 0, 0}, []byte{})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		d, err := DecodeDumpRecord(1, key, value)
		if err == nil && d.Payload != nil && !strings.HasSuffix(string(value), string(d.Payload)) {
			t.Fatalf("payload %q is not the value's tail %q", d.Payload, value)
		}
	})
}
