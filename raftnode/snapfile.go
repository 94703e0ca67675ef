package raftnode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// A snapshot file snapshot-<index>-<term>.snap (both 20-digit zero-padded
// decimals, so names sort by index) holds one raftpb.Snapshot. It is written
// atomically like the hard state. Part of the on-disk format:
//
//	+-------+---------+-------+------+-------------+-------------------+--------+
//	| magic | version | index | term | payload len | payload           | crc32c |
//	| 4     | 1       | 8     | 8    | 8           | protobuf Snapshot | 4      |
//	+-------+---------+-------+------+-------------+-------------------+--------+
//
// magic is "PLSN"; integers are big-endian; the CRC-32C covers every byte
// before it. index and term repeat the snapshot metadata and must match the
// file name and the payload.
const (
	snapMagic      = "PLSN"
	snapVersion    = 1
	snapHeaderSize = 4 + 1 + 8 + 8 + 8
	snapPrefix     = "snapshot-"
	snapSuffix     = ".snap"
	// maxSnapshotBytes bounds a snapshot file we are willing to load.
	maxSnapshotBytes = 1 << 30
)

func snapFileName(index, term uint64) string {
	return fmt.Sprintf("%s%020d-%020d%s", snapPrefix, index, term, snapSuffix)
}

// parseSnapFileName returns the index and term a snapshot file name carries.
func parseSnapFileName(name string) (index, term uint64, ok bool) {
	if !strings.HasPrefix(name, snapPrefix) || !strings.HasSuffix(name, snapSuffix) {
		return 0, 0, false
	}
	mid := strings.TrimSuffix(strings.TrimPrefix(name, snapPrefix), snapSuffix)
	is, ts, found := strings.Cut(mid, "-")
	if !found || len(is) != 20 || len(ts) != 20 {
		return 0, 0, false
	}
	index, err1 := strconv.ParseUint(is, 10, 64)
	term, err2 := strconv.ParseUint(ts, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return index, term, true
}

// snapFile is a snapshot file name with its parsed position.
type snapFile struct {
	name        string
	index, term uint64
}

// listSnapFiles returns the snapshot files among names, newest first.
func listSnapFiles(names []string) []snapFile {
	var out []snapFile
	for _, n := range names {
		if i, t, ok := parseSnapFileName(n); ok {
			out = append(out, snapFile{name: n, index: i, term: t})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].index != out[b].index {
			return out[a].index > out[b].index
		}
		return out[a].term > out[b].term
	})
	return out
}

func encodeSnapFile(s *pb.Snapshot) ([]byte, error) {
	payload, err := proto.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("raftnode: encode snapshot: %w", err)
	}
	b := make([]byte, 0, snapHeaderSize+len(payload)+4)
	b = append(b, snapMagic...)
	b = append(b, snapVersion)
	b = binary.BigEndian.AppendUint64(b, s.GetMetadata().GetIndex())
	b = binary.BigEndian.AppendUint64(b, s.GetMetadata().GetTerm())
	b = binary.BigEndian.AppendUint64(b, uint64(len(payload)))
	b = append(b, payload...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable)), nil
}

func decodeSnapFile(b []byte) (*pb.Snapshot, error) {
	bad := func(format string, args ...any) (*pb.Snapshot, error) {
		return nil, fmt.Errorf("%w: snapshot: %s", ErrCorruptState, fmt.Sprintf(format, args...))
	}
	if len(b) < snapHeaderSize+4 {
		return bad("%d bytes is too short", len(b))
	}
	if string(b[:4]) != snapMagic {
		return bad("magic %q", b[:4])
	}
	if b[4] != snapVersion {
		return bad("version %d", b[4])
	}
	index := binary.BigEndian.Uint64(b[5:])
	term := binary.BigEndian.Uint64(b[13:])
	n := binary.BigEndian.Uint64(b[21:])
	if n != uint64(len(b)-snapHeaderSize-4) {
		return bad("payload length %d does not match file size %d", n, len(b))
	}
	end := len(b) - 4
	if got, want := binary.BigEndian.Uint32(b[end:]), crc32.Checksum(b[:end], crcTable); got != want {
		return bad("crc %08x, want %08x", got, want)
	}
	s := &pb.Snapshot{}
	if err := proto.Unmarshal(b[snapHeaderSize:end], s); err != nil {
		return bad("payload: %v", err)
	}
	if s.GetMetadata().GetIndex() != index || s.GetMetadata().GetTerm() != term {
		return bad("header says %d/%d, payload %d/%d", index, term,
			s.GetMetadata().GetIndex(), s.GetMetadata().GetTerm())
	}
	if index == 0 {
		return bad("index 0")
	}
	return s, nil
}
