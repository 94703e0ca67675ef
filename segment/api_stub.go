package segment

// This file is the API contract of package segment that node, raftnode and
// client compile against. The storage helper replaces every body (and may move
// declarations into files named after their concept) but keeps these
// signatures; additions are fine.

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// FormatVersion (magic) of the record batch format.
const FormatVersion = 2

// Errors.
var (
	ErrCorrupt        = errors.New("segment: corrupt batch") // a bad batch where a good one must be
	ErrTornTail       = errors.New("segment: torn tail")     // a partial write at the end of the active segment
	ErrRecordTooLarge = errors.New("segment: record batch too large")
	ErrClosed         = errors.New("segment: log closed")
	ErrNonContiguous  = errors.New("segment: batch offset not contiguous with log end")
)

// OffsetOutOfRangeError is returned by Read for offsets outside [start, end].
type OffsetOutOfRangeError struct{ Requested, Start, End int64 }

func (e *OffsetOutOfRangeError) Error() string { return "segment: offset out of range" }

// IsCorruption reports whether err is or wraps ErrCorrupt.
func IsCorruption(err error) bool { return errors.Is(err, ErrCorrupt) }

// Header is a decoded record batch header (see the package doc for the layout).
type Header struct {
	BaseOffset      int64
	Length          int32 // bytes after the Length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	FirstTimestamp  int64 // unix milliseconds
	MaxTimestamp    int64
	ProducerID      int64 // -1 when not idempotent
	ProducerEpoch   int16
	BaseSequence    int32 // -1 when not idempotent
	RecordCount     int32
}

// LastOffset is BaseOffset + LastOffsetDelta.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// Batch is one encoded record batch: header + records. It aliases its bytes.
type Batch []byte

// ParseHeader decodes the header at the start of b without validating the CRC.
func ParseHeader(b []byte) (Header, error) { panic("unimplemented") }

// Validate checks the length field and the CRC-32C.
func (b Batch) Validate() error { panic("unimplemented") }

// Size is the total encoded size of the batch according to its length field.
func (b Batch) Size() int { panic("unimplemented") }

// BaseOffset, LastOffset, LeaderEpoch read header fields directly.
func (b Batch) BaseOffset() int64  { panic("unimplemented") }
func (b Batch) LastOffset() int64  { panic("unimplemented") }
func (b Batch) LeaderEpoch() int32 { panic("unimplemented") }

// SetBaseOffset and SetLeaderEpoch stamp fields outside the CRC in place.
func (b Batch) SetBaseOffset(off int64) { panic("unimplemented") }
func (b Batch) SetLeaderEpoch(e int32)  { panic("unimplemented") }

// SplitBatches walks buf batch by batch, calling fn for each whole, CRC-valid
// batch. It returns the number of bytes consumed and an error wrapping
// ErrCorrupt if a batch is invalid, or ErrTornTail if buf ends mid-batch.
func SplitBatches(buf []byte, fn func(Batch) error) (int, error) { panic("unimplemented") }

// RecordHeader is a record header (key/value pair).
type RecordHeader struct {
	Key   string
	Value []byte
}

// Record is one record read by an iterator; its byte slices alias the batch.
type Record struct {
	Offset    int64
	Timestamp int64 // unix milliseconds
	Key       []byte
	Value     []byte
	Headers   []RecordHeader
}

// Builder accumulates records into one batch for a producer.
type Builder struct{}

// BuilderOptions configures a batch; zero ProducerID means not idempotent (stored as -1).
type BuilderOptions struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Attributes    int16
}

// NewBuilder starts an empty batch.
func NewBuilder(opts BuilderOptions) *Builder { panic("unimplemented") }

// Add appends one record.
func (b *Builder) Add(timestampMs int64, key, value []byte, headers []RecordHeader) {
	panic("unimplemented")
}

// Len is the number of records added; Size the encoded size so far.
func (b *Builder) Len() int  { panic("unimplemented") }
func (b *Builder) Size() int { panic("unimplemented") }

// Build encodes the batch (base offset 0, CRC set). The builder may be Reset and reused.
func (b *Builder) Build() Batch              { panic("unimplemented") }
func (b *Builder) Reset(opts BuilderOptions) { panic("unimplemented") }

// Records iterates the records of a batch without allocating per record.
type Records struct{}

// Iter returns an iterator over the batch's records.
func (b Batch) Iter() *Records     { panic("unimplemented") }
func (it *Records) Next() bool     { panic("unimplemented") }
func (it *Records) Record() Record { panic("unimplemented") }
func (it *Records) Err() error     { panic("unimplemented") }

// SyncPolicy says when appended bytes are flushed to disk.
type SyncPolicy int

const (
	SyncAlways   SyncPolicy = iota // WaitDurable flushes (group commit)
	SyncInterval                   // a background flush every SyncInterval
	SyncNever                      // the OS decides
)

// ParseSyncPolicy parses "always", "never" or "interval=200ms".
func ParseSyncPolicy(s string) (SyncPolicy, time.Duration, error) { panic("unimplemented") }

// Options configure a Log. Zero fields take the documented defaults.
type Options struct {
	SegmentBytes   int64         // default 1 GiB
	IndexInterval  int           // default 4096
	MaxIndexBytes  int           // default 10 MiB
	RollAge        time.Duration // default 7 days; 0 = default, <0 = never
	RetentionBytes int64         // default -1 (unlimited)
	RetentionAge   time.Duration // default -1 (unlimited)
	MaxBatchBytes  int           // default 16 MiB - 1 KiB; larger appends fail with ErrRecordTooLarge
	Sync           SyncPolicy
	SyncInterval   time.Duration // default 200ms for SyncInterval
	InitialOffset  int64         // the log start offset of a brand new log (raftnode uses 1)
	FS             FS            // default the OS
	Logger         *slog.Logger
	Now            func() time.Time
	// TruncateOnCorruption makes Open truncate at a corrupt batch in a sealed
	// segment (logging it) instead of failing with a *CorruptionError.
	TruncateOnCorruption bool
}

// FS is the file-system interface all file access goes through (fault injection).
type FS interface{}

// AppendInfo describes where an appended batch landed.
type AppendInfo struct {
	BaseOffset int64
	LastOffset int64
	Position   int64 // byte position in its segment
}

// Log is a partition directory of segments. All methods are safe for concurrent use.
type Log struct{}

// Open opens or creates the log in dir, recovering after an unclean shutdown.
func Open(ctx context.Context, dir string, opts Options) (*Log, error) { panic("unimplemented") }

// Append assigns offsets starting at the log end, stamps leaderEpoch into the
// batch (it is modified in place) and copies it into the active segment. It does
// not wait for durability; call WaitDurable before acknowledging.
func (l *Log) Append(ctx context.Context, b Batch, leaderEpoch int32) (AppendInfo, error) {
	panic("unimplemented")
}

// AppendVerbatim stores batches that already carry offsets and epochs (a follower
// copying its leader). The first base offset must equal LogEndOffset.
func (l *Log) AppendVerbatim(ctx context.Context, batches []byte) (AppendInfo, error) {
	panic("unimplemented")
}

// WaitDurable returns once every byte below offset is on disk as the sync
// policy requires: SyncAlways flushes (coalescing concurrent callers into one
// flush), the other policies return at once.
func (l *Log) WaitDurable(ctx context.Context, offset int64) error { panic("unimplemented") }

// Sync flushes everything now regardless of policy.
func (l *Log) Sync(ctx context.Context) error { panic("unimplemented") }

// View is a read-only window of whole batches aliasing the segment mapping. The
// bytes stay valid until Release, even if the segment is deleted meanwhile.
type View struct {
	Data []byte // whole batches, possibly empty at the log end
	Next int64  // the offset after the last batch in Data
}

// Release drops the view's reference; Data must not be used afterwards.
func (v *View) Release() { panic("unimplemented") }

// Read returns whole batches starting with the batch containing offset, at most
// maxBytes (but always at least one batch if any is there) and never past
// maxOffset (exclusive; use the HW for consumers, -1 for no limit).
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (*View, error) {
	panic("unimplemented")
}

// LogStartOffset and LogEndOffset (the offset the next record will get).
func (l *Log) LogStartOffset() int64 { panic("unimplemented") }
func (l *Log) LogEndOffset() int64   { panic("unimplemented") }

// TruncateTo removes every batch at or after the batch that contains offset and
// returns the new log end offset.
func (l *Log) TruncateTo(ctx context.Context, offset int64) (int64, error) { panic("unimplemented") }

// TruncateFullyAndStartAt deletes everything and restarts the log at offset.
func (l *Log) TruncateFullyAndStartAt(ctx context.Context, offset int64) error {
	panic("unimplemented")
}

// DeleteBefore removes whole sealed segments entirely below offset and raises
// the log start offset to offset (raft compaction, DeleteRecords).
func (l *Log) DeleteBefore(ctx context.Context, offset int64) error { panic("unimplemented") }

// ApplyRetention deletes whole sealed segments by size and age.
func (l *Log) ApplyRetention(ctx context.Context) (deleted int, err error) { panic("unimplemented") }

// OffsetForTimestamp returns the first offset whose timestamp is >= ts, or -1.
func (l *Log) OffsetForTimestamp(ts int64) (int64, error) { panic("unimplemented") }

// EpochEntry is one leader-epoch cache entry.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// LatestEpoch is the epoch of the last batch in the log (-1 if empty).
func (l *Log) LatestEpoch() int32 { panic("unimplemented") }

// EndOffsetForEpoch answers KIP-101's OffsetsForLeaderEpoch: the largest epoch
// <= epoch that the log knows and the start offset of the next higher epoch (or
// the log end offset if it is the latest). Returns (-1, -1) if unknown.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) { panic("unimplemented") }

// Epochs returns a copy of the leader-epoch cache.
func (l *Log) Epochs() []EpochEntry { panic("unimplemented") }

// Close flushes, writes the clean-shutdown marker and unmaps everything once
// no view references remain. Later calls return ErrClosed.
func (l *Log) Close() error { panic("unimplemented") }

// WriteCheckpoint atomically replaces path with data (write tmp, fsync, rename, fsync dir).
func WriteCheckpoint(fs FS, path string, data []byte) error { panic("unimplemented") }

// ReadCheckpoint reads a checkpoint written by WriteCheckpoint (os.ErrNotExist if absent).
func ReadCheckpoint(fs FS, path string) ([]byte, error) { panic("unimplemented") }
