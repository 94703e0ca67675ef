// Package segment stores a partition's log: memory-mapped, append-only segment
// files with a sparse offset index, a time index, a leader-epoch cache and
// crash recovery. The same package stores the cluster metadata raft log.
//
// # Record batch format (FormatVersion 2)
//
// A record batch is the unit of storage, replication and transfer: producers
// encode it once, the leader stamps BaseOffset and LeaderEpoch in place, and
// every node stores and serves the same bytes. All integers are big-endian
// (network byte order). The format below is part of the on-disk and wire
// format; changing it requires a new FormatVersion.
//
//	offset size field            notes
//	------ ---- ---------------- ------------------------------------------------
//	   0    8   BaseOffset       int64; offset of the first record    \ not covered
//	   8    4   Length           int32; bytes after this field         | by the CRC
//	  12    4   LeaderEpoch      int32; stamped by the leader          /
//	  16    1   Magic            int8; FormatVersion (2)               (checked)
//	  17    4   CRC              uint32; CRC-32C (Castagnoli) of bytes [21, 12+Length)
//	  21    2   Attributes       int16; bits 0-2 codec, 3 log append     \
//	                                    time, 7 compacted                    |
//	  23    4   LastOffsetDelta  int32; RecordCount-1 (see compacted)    |
//	  27    8   FirstTimestamp   int64; unix ms of the first record      |
//	  35    8   MaxTimestamp     int64; largest record timestamp         | covered
//	  43    8   ProducerID       int64; -1 when not idempotent           | by the
//	  51    2   ProducerEpoch    int16; -1 when not idempotent           | CRC
//	  53    4   BaseSequence     int32; -1 when not idempotent           |
//	  57    4   RecordCount      int32; >= 1 (0 when compacted)          |
//	  61    …   Records          RecordCount records, see below         /
//
// With a compression codec (Attributes bits 0-2: 0 none, 3 lz4, 4 zstd; 1
// gzip and 2 snappy are refused) the Records section is stored compressed as
// one block (see Codec) and the header is unchanged; the CRC covers the
// stored bytes. Leaders, followers and recovery handle the compressed bytes
// as they are; readers (Records) decompress.
//
// Attributes bit 7 (AttrCompacted, paymentlog's own) marks a batch the log
// cleaner rewrote (compaction.go): its header is the original's but for
// Attributes, Length, CRC and RecordCount, which may be anything from 0 to
// LastOffsetDelta+1, and its records' OffsetDeltas increase with gaps (each
// record keeps its original bytes). Producers never set it.
//
// Attributes bit 3 (AttrLogAppendTime, Kafka's timestamp type) marks a batch
// whose records' timestamps are the time its leader appended it: the leader
// of a topic with message.timestamp.type=LogAppendTime sets it and both
// FirstTimestamp and MaxTimestamp to its clock (recomputing the CRC), and
// readers give every record MaxTimestamp; the records' TimestampDeltas are
// the producer's and are not read. Producers never set it. The other
// Attributes bits are reserved, 0.
//
// HeaderSize is 61. The total size of a batch is 12+Length. BaseOffset and
// LeaderEpoch lie outside the CRC so that a leader can stamp them without
// recomputing it; recovery protects BaseOffset by checking that offsets are
// contiguous, and LeaderEpoch (as in Kafka) is not protected. Length and Magic
// are protected indirectly: a wrong Length moves the end of the CRC'd range.
//
// Each record is varint-framed. Varints are zig-zag encoded signed varints as
// in encoding/binary.PutVarint:
//
//	field            type
//	---------------- ----------------------------------------------------------
//	Length           varint; bytes of the record after this field
//	Attributes       int8; reserved, 0
//	TimestampDelta   varint; Timestamp - FirstTimestamp
//	OffsetDelta      varint; Offset - BaseOffset (the record's index in the batch; increasing when compacted)
//	KeyLength        varint; -1 for a null key
//	Key              KeyLength bytes
//	ValueLength      varint; -1 for a null value
//	Value            ValueLength bytes
//	HeaderCount      varint
//	Headers          HeaderCount × (KeyLength varint, Key, ValueLength varint (-1 null), Value)
//
// # Files
//
// A log is a directory of segments. Segment files are named after their base
// offset in 20 decimal digits:
//
//	00000000000000000000.log        record batches, back to back
//	00000000000000000000.index      8-byte entries: relative offset uint32, position uint32
//	00000000000000000000.timeindex  12-byte entries: timestamp int64, relative offset uint32
//	log-start-offset                checkpoint: log start offset (after a deletion)
//	<segment file>.deleted          a deleted segment's file, renamed before its unlink
//	recovery-point                  checkpoint: segments below this offset are flushed and sealed
//	active-recovery-point           checkpoint: how far the active segment is durable and indexed (activepoint.go)
//	leader-epoch-checkpoint         checkpoint: leader-epoch cache
//	cleaner-offset-checkpoint       checkpoint: where the last compaction pass stopped (compaction.go)
//	cleaner-tombstone-checkpoint    checkpoint: the oldest batch timestamp (unix ms) of the tombstones that
//	                                pass kept below that point; absent: none (compaction_tombstones.go)
//	<segment file>.cleaned.tmp      a segment's files rewritten by compaction, before the swap
//	<base>.log.<next>.swap          compaction's new segment for the old ones of bases in [base, next),
//	                                committed and not yet renamed over <base>.log (compaction_swap.go)
//	.clean-shutdown                 marker: written by Close, removed by Open
//
// The active (last) segment's .log is sized to Options.SegmentBytes with
// ftruncate (a sparse file: an idle partition costs no disk) and mapped
// shared and read-only. An append is one copy of the batch bytes into the
// file's page cache with a positioned write, and those are the very pages the
// mapping shows; reads return slices of the mapping. (Stores through a
// writable mapping were measured several times slower on ext4, where every
// first store to a page of a sparse file faults and opens a journal handle,
// and a full disk would kill the process with SIGBUS instead of returning
// ErrDiskFull.) When a batch does not fit, the index is full or the segment is
// older than RollAge, the segment is sealed (flushed, truncated to its real
// size) and a new one is rolled. The active segment's index entries are kept
// in memory and written to its .index/.timeindex when it is sealed or the log
// is closed (after an unclean shutdown recovery rebuilds them from the scan);
// sealed indexes are mapped read-only. Under SyncNever a segment is sealed
// without an fsync; its .log, .index and .timeindex are fsynced in the
// background before the recovery point passes it. Recovery copes with a lost
// or torn index anyway: one that fails its checks is rebuilt by a scan, and so
// is a short one (entries lost from its end, both files alike): the bytes
// after its last entry reach the smallest distance between two of its entries
// (indexGap in recovery.go).
//
// An index entry is added for a batch when at least IndexInterval bytes were
// appended since the previous entry; it points at the batch's first byte. The
// time index entry written at the same moment holds the largest timestamp of
// all earlier batches of the segment, so every batch before its offset has a
// smaller or equal timestamp.
//
// # Checkpoint files
//
// Checkpoints are small text files replaced atomically (WriteCheckpoint: write
// a temporary file, fsync, rename, fsync the directory). Their first line is
// the checkpoint version (0); log-start-offset and recovery-point hold one
// decimal offset on the second line; leader-epoch-checkpoint holds the entry
// count and then one "epoch startOffset" line per entry. A batch that opens a
// new leader epoch is written, then the epoch checkpoint, and only then is the
// batch published; when the checkpoint does not fit on a full disk the batch's
// bytes are zeroed (the log ends before it, also for recovery) and the
// append fails with ErrDiskFull, leaving the log healthy (as does a roll
// whose sealed index does not fit; Options.OnDiskFull hears of each). Every append that
// fails after writing bytes zeroes them the same way: the bytes past the
// active segment's end are zeros, so recovery, which scans past the last
// flush, can never take a refused batch (or the remnant of one completed by
// a later partial write) for a batch of the log.
//
// # Recovery
//
// Recovery scans a segment through its mapping only up to the file's
// first hole (lseek SEEK_HOLE), and never reads a hole (on a full tmpfs a
// read fault on one is SIGBUS). Appends leave no gaps, so past the valid
// data there is normally nothing; data past a gap of zeros or a hole
// (pages a crash left unwritten while later ones reached the disk) is
// found with SEEK_DATA and makes the cut a damaged tail (gap.go).
//
// Open after a clean shutdown trusts the files (and cheaply checks each
// segment's tail against its index), except a segment missing an index
// file (one a compaction swap just put in place, or files lost), which it
// scans as below. After an unclean shutdown it scans every
// segment from the recovery point on, batch by batch, checking length, magic,
// CRC and offset continuity, and rebuilds their indexes and the epoch cache.
// In the active segment the scan starts at its own recovery point when one
// matches (activepoint.go: written every Options.ActivePointBytes of durable
// bytes, with the index entries below it), so a restart reads about that
// much instead of the whole segment.
// The first bad batch of the last segment is a torn tail: it and everything
// after it are removed (logged at info when it was not just preallocated
// zeros). Zeros after the last whole batch of an earlier, sealed segment are
// a seal whose truncation was lost (SyncNever seals without an fsync): they
// are trimmed, and the next segment must start where the batches end. Any
// other bad batch in an earlier, sealed segment is corruption: Open fails
// with a *CorruptionError naming the file and byte position, or truncates there
// when Options.TruncateOnCorruption is set (so a replica can re-fetch from its
// leader), or with Options.RepairCorruption first sets aside what the
// truncation takes out (quarantine.go) and reports the log torn. Bytes are
// never silently skipped.
//
// # Retention
//
// DeleteRetained (and ApplyRetention, with the Options limits) deletes whole
// sealed segments from the front of the log: the oldest one goes while it is
// past the size limit (the log without it is still at least Retention.Bytes
// long) or the age limit (its largest timestamp, the time index's last entry
// or its batches' MaxTimestamp, is older than Now minus Retention.Age), and
// while it holds nothing at or above Retention.Below (a partition's high
// watermark). The first segment that fails a test stops the pass; the active
// segment is never deleted, but RollExpired seals it once the age limit
// would delete it (so a log no longer written does not keep its last
// records for good), and the next pass deletes it. RetentionPoint answers where a pass would leave
// the log start without deleting, for a caller that must write state the
// deleted batches held first (node/broker's producer snapshot) and then
// calls DeleteBefore.
//
// A deletion (DeleteRetained, DeleteBefore) never makes appends wait for
// the disk. In order:
//
//  1. the log-start-offset checkpoint is replaced with the new log start
//     (WriteCheckpoint: fsynced, renamed, directory fsynced);
//  2. under the append lock, in memory only: the segments leave the log,
//     the log start moves and the epoch cache drops what is below it
//     (the leader-epoch checkpoint is not rewritten; Open drops its
//     entries below the log start);
//  3. each deleted segment's files are renamed to <name>.deleted, the log's
//     references to their mappings dropped, the renamed files unlinked and
//     the directory fsynced.
//
// Deletions and truncations are serialised by a lock appends never take.
// Open removes every *.deleted file and every segment wholly below the
// log-start-offset checkpoint, and takes the first remaining segment's
// base, or the checkpoint if higher, as the log start: a crash at any step
// (with any of the unsynced renames and unlinks durable) leaves the log
// start at or above what readers could see, which step 1 made durable
// before step 2 published it, and never a gap.
//
// # Lifetimes
//
// Read returns a *View aliasing a segment mapping. Every mapping is reference
// counted: the log holds one reference per live mapping and every View holds
// one. Retention, truncation and Close drop the log's reference; the memory is
// unmapped (and the file closed) when the last View is released, so a reader
// never faults and never sees recycled bytes. A truncation that cuts into a
// segment while Views of it are outstanding writes the kept prefix to a new
// file and renames it over the old one instead of truncating in place.
//
// # Disk stalls
//
// A disk can hang rather than fail: an fsync or msync that does not return
// for seconds (a SAN or cloud volume in an outage, a dying SSD, a frozen
// file system). Nothing in the log times out on its own; a WaitDurable
// returns at its context's end and leaves the flush running. DiskOps
// (diskops.go) tracks the operations in flight that can stall (fdatasync,
// msync, a directory's fsync, writes, truncations, allocations, creations,
// renames, removals; not reads) of every file reached through the FS it
// wraps, and says how long the oldest has been running: a node wraps the
// file systems of its partition logs and of its metadata log with one, and
// steps aside while that age exceeds its --disk-stall-timeout. It costs two
// clock reads and two short mutex sections per operation, nothing per
// record.
package segment
