package raftnode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"paymentlog/segment"
)

// logStore is the durable raft entry log: raft index i lives at log offset i.
// diskStorage drives it; segmentLog implements it on package segment, tests
// also use an in-memory version that can simulate a crash.
//
// Invariant: entries [Start(), End()) are readable; Start() >= 1.
type logStore interface {
	Start() uint64
	End() uint64
	// Append stores e, whose index must equal End(). It is not durable until Sync.
	Append(ctx context.Context, e *pb.Entry) error
	// Sync makes every appended entry durable.
	Sync(ctx context.Context) error
	// Read returns the entries [lo, hi) in order, stopping early (but after at
	// least one entry) once maxBytes of entry data are reached.
	Read(ctx context.Context, lo, hi, maxBytes uint64) ([]*pb.Entry, error)
	// TruncateTo removes the entries at and after index.
	TruncateTo(ctx context.Context, index uint64) error
	// DeleteBefore drops the entries below index (Start becomes index).
	DeleteBefore(ctx context.Context, index uint64) error
	// Reset drops everything; the log restarts empty at start.
	Reset(ctx context.Context, start uint64) error
	Close() error
}

// Entry records. Every raft entry is one segment record batch holding one
// record: the batch's base offset is the raft index and its leader-epoch field
// is the entry's term (capped at MaxInt32; the key holds the exact term).
// Part of the on-disk format:
//
//	record key:   | version 1 byte | entry type 1 byte | term uvarint |
//	record value: the entry data (raft's, unchanged: an envelope or a
//	              protobuf ConfChange/ConfChangeV2, see envelope.go)
const entryRecordV1 = 1

var errBadEntryRecord = errors.New("raftnode: malformed entry record")

func encodeEntryKey(e *pb.Entry) []byte {
	b := make([]byte, 0, 2+binary.MaxVarintLen64)
	b = append(b, entryRecordV1, byte(e.GetType()))
	return binary.AppendUvarint(b, e.GetTerm())
}

// decodeEntryRecord rebuilds the entry at index from its record; it copies value.
func decodeEntryRecord(index uint64, key, value []byte) (*pb.Entry, error) {
	if len(key) < 3 || key[0] != entryRecordV1 {
		return nil, fmt.Errorf("%w at index %d: bad key", errBadEntryRecord, index)
	}
	typ := pb.EntryType(key[1])
	switch typ {
	case pb.EntryNormal, pb.EntryConfChange, pb.EntryConfChangeV2:
	default:
		return nil, fmt.Errorf("%w at index %d: entry type %d", errBadEntryRecord, index, key[1])
	}
	term, n := binary.Uvarint(key[2:])
	if n <= 0 || n != len(key)-2 {
		return nil, fmt.Errorf("%w at index %d: bad term", errBadEntryRecord, index)
	}
	var data []byte
	if len(value) > 0 {
		data = append([]byte(nil), value...)
	}
	return &pb.Entry{Type: typ.Enum(), Term: new(term), Index: new(index), Data: data}, nil
}

func epochOf(term uint64) int32 {
	if term > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(term)
}

// segmentLog stores entries in a segment.Log (see the package doc for the layout).
type segmentLog struct {
	log *segment.Log
	b   *segment.Builder
	now func() time.Time
}

func openSegmentLog(ctx context.Context, dir string, cfg *Config) (*segmentLog, error) {
	sync := segment.SyncAlways
	if cfg.NoSync {
		sync = segment.SyncNever
	}
	l, err := segment.Open(ctx, dir, segment.Options{
		SegmentBytes:  cfg.SegmentBytes,
		MaxIndexBytes: int(max(cfg.SegmentBytes/256, 4096)), // an index entry per 4 KiB is ~SegmentBytes/341
		InitialOffset: 1,
		Sync:          sync,
		FS:            cfg.FS,
		Logger:        cfg.Logger,
		// Segments of a few MiB are scanned whole after a crash in
		// milliseconds: no active recovery point, and so no I/O off the
		// Ready loop's goroutine (TestStorageCrashAtEveryOp counts them).
		ActivePointBytes: -1,
	})
	if err != nil {
		return nil, fmt.Errorf("raftnode: open metadata log: %w", err)
	}
	return &segmentLog{log: l, b: segment.NewBuilder(segment.BuilderOptions{}), now: time.Now}, nil
}

func (s *segmentLog) Start() uint64 { return uint64(s.log.LogStartOffset()) }
func (s *segmentLog) End() uint64   { return uint64(s.log.LogEndOffset()) }

func (s *segmentLog) Append(ctx context.Context, e *pb.Entry) error {
	s.b.Reset(segment.BuilderOptions{})
	s.b.Add(s.now().UnixMilli(), encodeEntryKey(e), e.GetData(), nil)
	info, err := s.log.Append(ctx, s.b.Build(), epochOf(e.GetTerm()))
	if err != nil {
		return fmt.Errorf("raftnode: append entry %d: %w", e.GetIndex(), err)
	}
	if uint64(info.BaseOffset) != e.GetIndex() {
		// The caller checked End() == index; the log disagrees with itself.
		panic(fmt.Sprintf("raftnode: entry %d landed at offset %d", e.GetIndex(), info.BaseOffset))
	}
	return nil
}

func (s *segmentLog) Sync(ctx context.Context) error {
	return s.log.WaitDurable(ctx, s.log.LogEndOffset())
}

func (s *segmentLog) Read(ctx context.Context, lo, hi, maxBytes uint64) ([]*pb.Entry, error) {
	var out []*pb.Entry
	var size uint64
	readBytes := int(min(maxBytes, 16<<20)) + 4096 // batch overhead; Read returns at least one batch anyway
	next := lo
	for next < hi && (len(out) == 0 || size < maxBytes) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v, err := s.log.Read(int64(next), readBytes, int64(hi))
		if err != nil {
			return nil, fmt.Errorf("raftnode: read entries [%d, %d): %w", next, hi, err)
		}
		before := next
		_, err = segment.SplitBatches(v.Data, func(b segment.Batch) error {
			base := uint64(b.BaseOffset())
			switch {
			case base < next: // Read starts with the batch containing next
				return nil
			case base != next:
				return fmt.Errorf("%w: expected index %d, found batch at %d", errBadEntryRecord, next, base)
			case next >= hi || (len(out) > 0 && size >= maxBytes):
				return errStopSplit
			}
			e, err := decodeEntryBatch(next, b)
			if err != nil {
				return err
			}
			out = append(out, e)
			size += uint64(proto.Size(e))
			next++
			return nil
		})
		v.Release()
		if err != nil && !errors.Is(err, errStopSplit) {
			return nil, fmt.Errorf("raftnode: read entries [%d, %d): %w", lo, hi, err)
		}
		if next == before && !errors.Is(err, errStopSplit) {
			return nil, fmt.Errorf("raftnode: read entries [%d, %d): no entry at %d", lo, hi, next)
		}
		if errors.Is(err, errStopSplit) {
			break
		}
	}
	return out, nil
}

// decodeEntryBatch decodes the entry stored in b (one record).
func decodeEntryBatch(index uint64, b segment.Batch) (*pb.Entry, error) {
	it := b.Iter()
	if !it.Next() {
		if err := it.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w at index %d: empty batch", errBadEntryRecord, index)
	}
	r := it.Record()
	return decodeEntryRecord(index, r.Key, r.Value)
}

var errStopSplit = errors.New("stop")

func (s *segmentLog) TruncateTo(ctx context.Context, index uint64) error {
	end, err := s.log.TruncateTo(ctx, int64(index))
	if err != nil {
		return fmt.Errorf("raftnode: truncate log to %d: %w", index, err)
	}
	if uint64(end) != index {
		panic(fmt.Sprintf("raftnode: truncate to %d left the log end at %d", index, end))
	}
	return nil
}

func (s *segmentLog) DeleteBefore(ctx context.Context, index uint64) error {
	if err := s.log.DeleteBefore(ctx, int64(index)); err != nil {
		return fmt.Errorf("raftnode: compact log before %d: %w", index, err)
	}
	return nil
}

func (s *segmentLog) Reset(ctx context.Context, start uint64) error {
	if err := s.log.TruncateFullyAndStartAt(ctx, int64(start)); err != nil {
		return fmt.Errorf("raftnode: reset log at %d: %w", start, err)
	}
	return nil
}

func (s *segmentLog) Close() error { return s.log.Close() }
