package raftnode

import (
	"fmt"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// DumpedEntry is one entry of the metadata log's segment files as
// `paymentlog log dump --metadata` shows it.
type DumpedEntry struct {
	Term uint64
	// Type is raft's entry type: EntryNormal, EntryConfChange or
	// EntryConfChangeV2.
	Type string
	// Proposer is the raft id of the node that proposed a normal entry (0
	// for raft's own no-op, which has no payload).
	Proposer uint64
	// Payload is a normal entry's state machine bytes (the metadata
	// records, node/metadata.DecodeEntry); nil for a no-op or a conf
	// change.
	Payload []byte
	// ConfChange describes a conf change entry.
	ConfChange string
}

// DecodeDumpRecord decodes the record at offset index of a metadata log
// segment (the layout of entrylog.go and envelope.go). Bytes from disk:
// every length is checked by the decoders it uses (fuzzed:
// FuzzDecodeEntryRecord, FuzzDecodeEnvelope).
func DecodeDumpRecord(index uint64, key, value []byte) (DumpedEntry, error) {
	e, err := decodeEntryRecord(index, key, value)
	if err != nil {
		return DumpedEntry{}, err
	}
	d := DumpedEntry{Term: e.GetTerm(), Type: e.GetType().String()}
	switch e.GetType() {
	case pb.EntryNormal:
		if len(e.Data) == 0 {
			return d, nil // a new leader's no-op
		}
		id, payload, err := decodeEnvelope(e.Data)
		if err != nil {
			return d, err
		}
		d.Proposer, d.Payload = id.node, payload
	case pb.EntryConfChange:
		var cc pb.ConfChange
		if err := proto.Unmarshal(e.Data, &cc); err != nil {
			return d, fmt.Errorf("raftnode: conf change at index %d: %w", index, err)
		}
		d.ConfChange = fmt.Sprintf("%s node %d", cc.GetType(), cc.GetNodeId())
	case pb.EntryConfChangeV2:
		var cc pb.ConfChangeV2
		if err := proto.Unmarshal(e.Data, &cc); err != nil {
			return d, fmt.Errorf("raftnode: conf change at index %d: %w", index, err)
		}
		for _, c := range cc.GetChanges() {
			if d.ConfChange != "" {
				d.ConfChange += ", "
			}
			d.ConfChange += fmt.Sprintf("%s node %d", c.GetType(), c.GetNodeId())
		}
	}
	return d, nil
}
