package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Envelopes wrap what raftnode puts into raft entries so that an applied entry
// can be matched with the Propose call that is waiting for it. Part of the
// on-disk format (they are stored in the metadata log and in snapshots):
// never change an existing version's layout.
//
// Normal entry data (EntryNormal):
//
//	+---------+----------------+---------------+-----------------+
//	| version | proposer       | sequence      | payload         |
//	| 1 byte  | uvarint        | uvarint       | rest            |
//	+---------+----------------+---------------+-----------------+
//
// version is envelopeV1. (proposer, sequence) is the proposal id: proposer is
// the raft id of the node that proposed, sequence starts at a random value in
// every process so ids are unique across restarts. An entry with empty data
// is raft's own no-op (appended by every new leader) and carries no envelope.
//
// Conf change context (ConfChange.Context) has the same layout; its payload is
// the address of the node being added (UTF-8, may be empty).
//
// Snapshot data (raftpb.Snapshot.Data):
//
//	+---------+---------+---------------------------------+----------------+
//	| version | n peers | n x (id uvarint, len uvarint,   | state machine  |
//	| 1 byte  | uvarint |      addr bytes)                | snapshot, rest |
//	+---------+---------+---------------------------------+----------------+
const envelopeV1 = 1

// maxAddrLen bounds a peer address inside an envelope.
const maxAddrLen = 1024

// maxSnapshotPeers bounds the number of peers in a snapshot envelope.
const maxSnapshotPeers = 1 << 16

var errBadEnvelope = errors.New("raftnode: malformed entry envelope")

// proposalID identifies one proposal cluster-wide.
type proposalID struct {
	node uint64
	seq  uint64
}

// encodeEnvelope returns version | node | seq | payload.
func encodeEnvelope(id proposalID, payload []byte) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(payload))
	b = append(b, envelopeV1)
	b = binary.AppendUvarint(b, id.node)
	b = binary.AppendUvarint(b, id.seq)
	return append(b, payload...)
}

// decodeEnvelope splits an envelope; payload aliases b.
func decodeEnvelope(b []byte) (proposalID, []byte, error) {
	if len(b) == 0 {
		return proposalID{}, nil, fmt.Errorf("%w: empty", errBadEnvelope)
	}
	if b[0] != envelopeV1 {
		return proposalID{}, nil, fmt.Errorf("%w: unknown version %d", errBadEnvelope, b[0])
	}
	b = b[1:]
	node, n := binary.Uvarint(b)
	if n <= 0 {
		return proposalID{}, nil, fmt.Errorf("%w: bad proposer", errBadEnvelope)
	}
	b = b[n:]
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return proposalID{}, nil, fmt.Errorf("%w: bad sequence", errBadEnvelope)
	}
	return proposalID{node: node, seq: seq}, b[n:], nil
}

// snapshotData is what raftnode stores in raftpb.Snapshot.Data: the peer
// addresses it knows (learners are added with an address that the ConfState
// does not carry) and the state machine's own snapshot.
type snapshotData struct {
	peers map[uint64]string
	sm    []byte
}

func encodeSnapshotData(d snapshotData) []byte {
	b := []byte{envelopeV1}
	b = binary.AppendUvarint(b, uint64(len(d.peers)))
	for _, id := range sortedIDs(d.peers) {
		b = binary.AppendUvarint(b, id)
		b = binary.AppendUvarint(b, uint64(len(d.peers[id])))
		b = append(b, d.peers[id]...)
	}
	return append(b, d.sm...)
}

// decodeSnapshotData parses snapshot data; sm aliases b.
func decodeSnapshotData(b []byte) (snapshotData, error) {
	bad := func(what string) (snapshotData, error) {
		return snapshotData{}, fmt.Errorf("%w: snapshot data: %s", errBadEnvelope, what)
	}
	if len(b) == 0 || b[0] != envelopeV1 {
		return bad("missing or unknown version")
	}
	b = b[1:]
	n, k := binary.Uvarint(b)
	// Every peer takes at least two bytes (id, address length): a count
	// that cannot fit is refused before the map is sized for it.
	if k <= 0 || n > maxSnapshotPeers || n > uint64(len(b)-k)/2 {
		return bad("bad peer count")
	}
	b = b[k:]
	d := snapshotData{peers: make(map[uint64]string, n)}
	for range n {
		id, k := binary.Uvarint(b)
		if k <= 0 || id == 0 {
			return bad("bad peer id")
		}
		b = b[k:]
		l, k := binary.Uvarint(b)
		if k <= 0 || l > maxAddrLen || l > uint64(len(b)-k) {
			return bad("bad peer address length")
		}
		b = b[k:]
		d.peers[id] = string(b[:l])
		b = b[l:]
	}
	d.sm = b
	return d, nil
}
