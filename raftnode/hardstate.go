package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	pb "go.etcd.io/raft/v3/raftpb"
)

// The hard state file (hardStateFile) holds raft's HardState. It is replaced
// atomically (write temporary file, fsync, rename, fsync directory), so it is
// always either the old or the new version. Part of the on-disk format:
//
//	+-------+---------+--------+--------+--------+-----------+
//	| magic | version | term   | vote   | commit | crc32c    |
//	| 4     | 1       | 8      | 8      | 8      | 4         |
//	+-------+---------+--------+--------+--------+-----------+
//
// Integers are big-endian; the CRC-32C (Castagnoli) covers every byte before
// it. magic is "PLHS".
const (
	hardStateFile    = "raft-hardstate"
	hardStateMagic   = "PLHS"
	hardStateVersion = 1
	hardStateSize    = 4 + 1 + 8 + 8 + 8 + 4
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrCorruptState reports a raft state file (hard state or snapshot) that
// fails its checks.
var ErrCorruptState = errors.New("raftnode: corrupt raft state file")

func encodeHardState(hs *pb.HardState) []byte {
	b := make([]byte, 0, hardStateSize)
	b = append(b, hardStateMagic...)
	b = append(b, hardStateVersion)
	b = binary.BigEndian.AppendUint64(b, hs.GetTerm())
	b = binary.BigEndian.AppendUint64(b, hs.GetVote())
	b = binary.BigEndian.AppendUint64(b, hs.GetCommit())
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

func decodeHardState(b []byte) (*pb.HardState, error) {
	if len(b) != hardStateSize {
		return nil, fmt.Errorf("%w: hard state is %d bytes, want %d", ErrCorruptState, len(b), hardStateSize)
	}
	if string(b[:4]) != hardStateMagic {
		return nil, fmt.Errorf("%w: hard state magic %q", ErrCorruptState, b[:4])
	}
	if b[4] != hardStateVersion {
		return nil, fmt.Errorf("%w: hard state version %d", ErrCorruptState, b[4])
	}
	if got, want := binary.BigEndian.Uint32(b[29:]), crc32.Checksum(b[:29], crcTable); got != want {
		return nil, fmt.Errorf("%w: hard state crc %08x, want %08x", ErrCorruptState, got, want)
	}
	return &pb.HardState{
		Term:   new(binary.BigEndian.Uint64(b[5:])),
		Vote:   new(binary.BigEndian.Uint64(b[13:])),
		Commit: new(binary.BigEndian.Uint64(b[21:])),
	}, nil
}
