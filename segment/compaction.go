package segment

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"time"
)

// Compaction (Kafka's log cleaner, for topics with cleanup.policy=compact)
// keeps, for every key, at least its latest record: a record is removed
// only when a record with the same key at a higher offset is in the log
// below the pass's bound, or when it is a tombstone (null value) that
// earlier passes cleaned past and that is older than DeleteRetention.
// Offsets never change:
//
//   - Every batch keeps its header: the same base offset, last offset
//     delta, timestamps and producer fields. A batch that loses records is
//     rewritten with the AttrCompacted bit, fewer records (down to none)
//     and a new CRC; its remaining records keep their bytes and offset
//     deltas, so offsets along the log stay contiguous batch by batch, and
//     recovery, reads, replication and the idempotent producer state see
//     the log as before. A compressed batch is recompressed with its codec
//     (stored uncompressed when that does not shrink it).
//   - Neighbouring batches left empty, of one leader epoch and one
//     producer whose sequence numbers go on from one to the next (or of no
//     producer), are merged into one empty batch spanning their offsets and
//     sequence numbers (emptyRun): one the producer might have written
//     itself, so the same holds of it, and a long-lived compacted topic's
//     log does not grow by a batch header per batch ever written. A
//     follower whose log ends inside such a run is sent its rest as one
//     batch (TrimEmptyBatch).
//   - Only sealed segments wholly below CompactOptions.Below (the HW) and
//     durable (below the recovery point) are read or rewritten, never the
//     active one: what may still be truncated supersedes nothing.
//
// A pass maps the latest offset of every key in the dirty part (from the
// cleaner-offset-checkpoint, where the previous pass stopped, to the bound;
// at most MaxKeys keys), then rewrites the sealed segments below that in
// groups (compaction_group.go): each group of neighbouring segments that
// fit in one becomes one segment, written into new files beside the first
// (<base>.log.cleaned.tmp and its two indexes, written and fsynced while
// appends, reads and replication go on) and swapped in for the group under
// deleteMu (so no deletion or truncation runs meanwhile), so that a crash
// at any point leaves either the old segments or the new one, never a mix
// (compaction_swap.go). A group of one segment that loses no record is
// left as it is. Readers holding a View of an old segment keep its mapping
// (of the old, now unlinked, file) until they release it.

// ErrCompactionRunning is returned by a Compact that found another pass
// running on the log.
var ErrCompactionRunning = errors.New("segment: a compaction pass is already running")

const cleanedSuffix = ".cleaned.tmp"

// compactWriteChunk bounds each write of a stretch of a segment copied
// as it is, so that a Throttle paces it.
const compactWriteChunk = 1 << 20

// CompactOptions bounds and tunes one compaction pass (Log.Compact).
type CompactOptions struct {
	// Below bounds the pass: only sealed segments holding nothing at or
	// above this offset are read or rewritten (the replica's high
	// watermark: a record that may still be truncated must not supersede
	// anything).
	Below int64
	// MinDirtyRatio: the pass runs only when the dirty bytes (not cleaned
	// by an earlier pass) are at least this share of the cleanable bytes
	// (Kafka's min.cleanable.dirty.ratio, 0.5). 0 runs whenever anything
	// is dirty.
	MinDirtyRatio float64
	// MinLag: a segment holding a record newer than Now minus MinLag is not
	// cleaned, nor is any after it (min.compaction.lag.ms).
	MinLag time.Duration
	// MaxLag (max.compaction.lag.ms; 0: none): a pass runs whatever the
	// dirty ratio once the first batch of the first segment holding dirty
	// records is older than Now minus MaxLag, so that a record (a
	// tombstone deleting someone's data, say) waits at most about MaxLag
	// for a pass once its segment is sealed (the broker also rolls the
	// active segment of such a topic after MaxLag: Log.SetRollAge).
	MaxLag time.Duration
	// DeleteRetention: a tombstone (a record with a key and a null value)
	// is removed once an earlier pass cleaned past it and its batch's
	// largest timestamp is older than Now minus DeleteRetention
	// (delete.retention.ms): consumers reading from the log start had that
	// long to see the delete.
	DeleteRetention time.Duration
	// MaxKeys bounds the key map (memory): a dirty part with more distinct
	// keys is cleaned over several passes (a pass maps at least one
	// batch). 0: DefaultCompactMaxKeys.
	MaxKeys int
	// MaxMapBytes bounds the key map's memory too, counted as each key's
	// bytes plus KeyMapEntryBytes: long keys make a pass map fewer of
	// them, not use more memory (Kafka's log.cleaner.dedupe.buffer.size,
	// whose map holds a key's hash instead, with a collision's risk). 0:
	// DefaultCompactMaxMapBytes.
	MaxMapBytes int64
	// Now is the time MinLag and DeleteRetention count from (zero: the
	// log's Options.Now).
	Now time.Time
	// Throttle (nil: none) is told of the bytes the pass reads and writes
	// as it goes (each batch read, each write to a new segment file, each
	// new file scanned back), and may block to hold the pass to a rate
	// (Kafka's log.cleaner.io.max.bytes.per.second). An error it returns
	// ends the pass (a segment being rewritten is left as it was).
	Throttle func(ctx context.Context, n int) error
}

// DefaultCompactMaxKeys is CompactOptions.MaxKeys when zero.
const DefaultCompactMaxKeys = 1 << 20

// DefaultCompactMaxMapBytes is CompactOptions.MaxMapBytes when zero
// (Kafka's log.cleaner.dedupe.buffer.size default).
const DefaultCompactMaxMapBytes = 128 << 20

// KeyMapEntryBytes is what a key map entry costs besides the key's bytes
// (its string header, offset and share of the map's buckets), for
// CompactOptions.MaxMapBytes.
const KeyMapEntryBytes = 48

// CompactResult says what a pass did.
type CompactResult struct {
	// Ran is false when the pass found nothing to do: no sealed segment
	// below Below, nothing dirty, or a dirty ratio below MinDirtyRatio.
	Ran bool
	// DirtyRatio is the dirty bytes' share of the cleanable bytes before
	// the pass.
	DirtyRatio float64
	// Overdue: the pass ran below MinDirtyRatio because dirty records
	// were older than MaxLag. TombstonesDue: it ran, with nothing dirty
	// or below MinDirtyRatio, because a tombstone an earlier pass kept
	// was past DeleteRetention (compaction_tombstones.go).
	Overdue, TombstonesDue bool
	// FirstDirty and CleanedTo: the pass mapped the keys of
	// [FirstDirty, CleanedTo); the next pass's dirty part starts at
	// CleanedTo.
	FirstDirty, CleanedTo int64
	// Keys is the number of distinct keys mapped.
	Keys int
	// Segments written, each in place of a group of old ones
	// (compaction_group.go), and the old segments' bytes and the new
	// ones'; SegmentsMerged counts the old segments folded into the one
	// before them (a group of n merges n-1).
	Segments, SegmentsMerged int
	BytesBefore, BytesAfter  int64
	// RecordsRemoved counts every record removed: superseded by a later
	// record with the same key, or a tombstone past DeleteRetention;
	// TombstonesRemoved counts the tombstones among them.
	RecordsRemoved, TombstonesRemoved int64
	// BatchesMerged counts the empty batches merged into the empty batch
	// before them (emptyRun).
	BatchesMerged int64
}

// cleanable is a sealed segment a pass may read, with a reference to its
// mapping held.
type cleanable struct {
	s    *segment
	mp   *mapping
	data []byte
	next int64
	at   int // its index in the log's segment list when listed
}

// Compact runs one compaction pass (see above). It returns
// ErrCompactionRunning if another pass is running, ErrClosed after Close,
// and a *CorruptionError if a segment it reads is damaged (it then changes
// nothing more). Appends, reads and replication go on while it runs.
func (l *Log) Compact(ctx context.Context, o CompactOptions) (CompactResult, error) {
	if !l.compactMu.TryLock() {
		return CompactResult{}, ErrCompactionRunning
	}
	defer l.compactMu.Unlock()
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultCompactMaxKeys
	}
	if o.MaxMapBytes <= 0 {
		o.MaxMapBytes = DefaultCompactMaxMapBytes
	}
	if o.Now.IsZero() {
		o.Now = l.opts.Now()
	}
	l.beginCleanerPass()
	segs, logStart, err := l.cleanableSegments(o)
	if err != nil {
		return CompactResult{}, err
	}
	defer func() {
		for _, c := range segs {
			c.mp.release()
		}
	}()
	if len(segs) == 0 {
		return CompactResult{}, nil
	}
	end := segs[len(segs)-1].next
	firstDirty := min(max(l.firstDirty(), logStart), end)
	var total, dirty int64
	for _, c := range segs {
		total += int64(len(c.data))
		if c.next > firstDirty {
			dirty += int64(len(c.data))
		}
	}
	res := CompactResult{FirstDirty: firstDirty, CleanedTo: firstDirty}
	if total > 0 {
		res.DirtyRatio = float64(dirty) / float64(total)
	}
	horizon := msBefore(o.Now, o.DeleteRetention)
	switch {
	case dirty > 0 && res.DirtyRatio >= o.MinDirtyRatio:
	case dirty > 0 && overdue(segs, firstDirty, o):
		res.Overdue = true
	case l.oldestTombstone() < horizon:
		res.TombstonesDue = true
	default:
		return res, nil
	}
	res.Ran = true
	throttle := o.Throttle
	if throttle == nil {
		throttle = func(context.Context, int) error { return nil }
	}
	keys, cleanedTo, err := mapKeys(ctx, segs, firstDirty, logStart, end, o.MaxKeys, o.MaxMapBytes, throttle)
	if err != nil {
		return res, err
	}
	res.Keys, res.CleanedTo = len(keys), cleanedTo
	oldestKept := int64(noTombstone) // of the tombstones kept below cleanedTo
	keep := func(r Record, batchMaxTs int64) recordFate {
		switch {
		case r.Offset < logStart || r.Key == nil:
			return keepRecord
		case keys[string(r.Key)] > r.Offset:
			return dropSuperseded
		case r.Value == nil && r.Offset < firstDirty && batchMaxTs < horizon:
			return dropTombstone
		}
		if r.Value == nil && r.Offset < cleanedTo {
			oldestKept = min(oldestKept, batchMaxTs)
		}
		return keepRecord
	}
	below := 0 // nothing from segs[below] on is superseded, nor a tombstone cleaned past
	for below < len(segs) && segs[below].s.base < cleanedTo {
		below++
	}
	for _, g := range groupCleanables(segs[:below], l.groupLimits()) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		st, err := l.rewriteGroup(ctx, g, keep, throttle)
		if err != nil {
			return res, err
		}
		if st.written {
			res.Segments++
			res.SegmentsMerged += len(g) - 1
			for _, c := range g {
				res.BytesBefore += int64(len(c.data))
			}
			res.BytesAfter += st.size
			res.RecordsRemoved += st.superseded + st.tombstones
			res.TombstonesRemoved += st.tombstones
			res.BatchesMerged += st.merged
		}
	}
	if err := l.saveCleanerPoint(cleanedTo); err != nil {
		return res, l.ioErr(err)
	}
	if err := l.setOldestTombstone(oldestKept); err != nil {
		return res, l.ioErr(err)
	}
	if res.Segments > 0 {
		l.logger.Info("segment: compacted", "segments", res.Segments, "segments_merged", res.SegmentsMerged, "bytes_before", res.BytesBefore,
			"bytes_after", res.BytesAfter, "records_removed", res.RecordsRemoved,
			"tombstones_removed", res.TombstonesRemoved, "batches_merged", res.BatchesMerged, "keys", res.Keys, "cleaned_to", cleanedTo)
	}
	return res, nil
}

// overdue reports whether the dirty part of segs is older than o.MaxLag
// (CompactOptions.MaxLag): the first batch of the first segment holding
// dirty records, a bound on the age of its oldest dirty record that errs
// towards cleaning early. A batch that does not read counts as overdue:
// the pass then finds and reports the damage.
func overdue(segs []cleanable, firstDirty int64, o CompactOptions) bool {
	if o.MaxLag <= 0 {
		return false
	}
	for _, c := range segs {
		if c.next <= firstDirty {
			continue
		}
		b, err := c.batchAt(0)
		return err != nil || b.MaxTimestamp() < msBefore(o.Now, o.MaxLag)
	}
	return false
}

// cleanableSegments returns the sealed segments a pass may read, oldest
// first, each with its mapping referenced (the caller releases them), and
// the log start offset. They are durable, wholly below o.Below and, with
// MinLag, hold nothing newer than Now minus MinLag; the list stops at the
// first segment that is not.
func (l *Log) cleanableSegments(o CompactOptions) ([]cleanable, int64, error) {
	l.appendMu.Lock()
	durable := l.recoveryPoint
	err := l.writableLocked()
	l.appendMu.Unlock()
	if err != nil {
		return nil, 0, err
	}
	lagTs := msBefore(o.Now, o.MinLag)
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil, 0, ErrClosed
	}
	var out []cleanable
	for i, s := range l.mu.segs[:len(l.mu.segs)-1] {
		if s.next > o.Below || s.next > durable || (o.MinLag > 0 && s.maxTs > lagTs) {
			break
		}
		if s.mp == nil || s.size == 0 || s.next <= l.mu.logStart {
			continue
		}
		s.mp.acquire()
		out = append(out, cleanable{s: s, mp: s.mp, data: s.mp.data[:s.size:s.size], next: s.next, at: i})
	}
	return out, l.mu.logStart, nil
}

// msBefore is now minus d in unix milliseconds, the smallest int64 when
// that is out of range (a retention of centuries).
func msBefore(now time.Time, d time.Duration) int64 {
	n, ms := now.UnixMilli(), d.Milliseconds()
	if ms > 0 && n < math.MinInt64+ms {
		return math.MinInt64
	}
	return n - ms
}

// mapKeys maps each key of the records in [firstDirty, end) (at or above
// logStart) to its latest offset, batch by batch, stopping before a batch
// once maxKeys keys, or maxBytes of them (CompactOptions.MaxMapBytes), are
// mapped (after at least one batch). It returns the map and the offset it
// mapped up to.
func mapKeys(ctx context.Context, segs []cleanable, firstDirty, logStart, end int64, maxKeys int, maxBytes int64, throttle func(context.Context, int) error) (map[string]int64, int64, error) {
	keys := make(map[string]int64)
	var size int64 // of the map, as MaxMapBytes counts it
	mapped := false
	var it Records
	for _, c := range segs {
		if c.next <= firstDirty {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		for pos := 0; pos < len(c.data); {
			b, err := c.batchAt(pos)
			if err != nil {
				return nil, 0, err
			}
			pos += len(b)
			if err := throttle(ctx, len(b)); err != nil {
				return nil, 0, err
			}
			if b.LastOffset() < firstDirty {
				continue
			}
			if mapped && (len(keys) >= maxKeys || size >= maxBytes) {
				return keys, b.BaseOffset(), nil
			}
			mapped = true
			it.Reset(b)
			for it.Next() {
				r := it.Record()
				if r.Offset >= firstDirty && r.Offset >= logStart && r.Key != nil {
					if _, ok := keys[string(r.Key)]; !ok {
						size += int64(len(r.Key)) + KeyMapEntryBytes
					}
					keys[string(r.Key)] = r.Offset
				}
			}
			if err := it.Err(); err != nil {
				return nil, 0, c.s.corruptAt(int64(pos-len(b)), b.BaseOffset(), err)
			}
		}
	}
	return keys, end, nil
}

// batchAt returns the whole, CRC-checked batch at pos.
func (c cleanable) batchAt(pos int) (Batch, error) {
	b, err := nextBatch(c.data, pos)
	if err == nil {
		err = b.Validate()
	}
	if err != nil {
		return nil, c.s.corruptAt(int64(pos), -1, err)
	}
	return b, nil
}

// recordFate is what a pass does with a record.
type recordFate uint8

const (
	keepRecord recordFate = iota
	dropSuperseded
	dropTombstone
)

// rewriteStats is what rewriteGroup did to one group of segments.
type rewriteStats struct {
	written                bool
	size                   int64
	superseded, tombstones int64
	merged                 int64 // empty batches merged into the one before them
}

// emptyRun is a run of consecutive batches a pass left without records
// (or found so), which one empty batch can stand for: the same leader
// epoch and attributes, and the same producer id and epoch with sequence
// numbers that go on from batch to batch (or no producer), so that the
// merged batch is one the producer might have written itself, spanning
// the run's offsets and sequence numbers. Leader epochs, the idempotent
// producers' state rebuilt from batch headers and KIP-320 readers see the
// same log; a follower whose log ends inside the run is sent the rest of
// it as one batch (TrimEmptyBatch).
type emptyRun struct {
	n            int
	pos, end     int    // the run's bytes in the old segment
	first, last  Header // (as the pass left them)
	batch        Batch  // the first batch, as the pass left it
	minTs, maxTs int64
}

// TrimEmptyBatch returns data, batches read from offset from, with its
// first batch replaced when that starts below from and holds no record (an
// emptyRun the cleaner merged, which a follower whose log ends at from,
// inside it, could not append): by an empty batch of the same header from
// from to its last offset, its sequence numbers moved on to match. data
// itself otherwise, and when its first batch is not whole.
func TrimEmptyBatch(data []byte, from int64) []byte {
	h, err := ParseHeader(data)
	if err != nil || h.BaseOffset >= from || from > h.LastOffset() || h.RecordCount != 0 || !h.Compacted() ||
		Batch(data).Validate() != nil { // (a first batch cut short fails it too)
		return data
	}
	rest := data[lengthPrefix+int(h.Length):]
	out := make([]byte, HeaderSize, HeaderSize+len(rest))
	copy(out, data[:HeaderSize])
	be.PutUint64(out[offBaseOffset:], uint64(from))
	be.PutUint32(out[offLength:], uint32(HeaderSize-lengthPrefix))
	be.PutUint32(out[offLastOffsetDelta:], uint32(h.LastOffset()-from))
	if h.ProducerID >= 0 && h.BaseSequence >= 0 {
		be.PutUint32(out[offBaseSequence:], uint32(int64(h.BaseSequence)+from-h.BaseOffset))
	}
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return append(out, rest...)
}

// accepts reports whether h, empty, may join the run.
func (r *emptyRun) accepts(h Header) bool {
	const same = codecMask | AttrCompacted
	f := r.first
	switch {
	case r.n == 0 || h.BaseOffset != r.last.LastOffset()+1 || h.LastOffset()-f.BaseOffset > math.MaxInt32:
		return false
	case h.LeaderEpoch != f.LeaderEpoch || h.Attributes&^same != f.Attributes&^same:
		return false
	case h.ProducerID != f.ProducerID || h.ProducerEpoch != f.ProducerEpoch:
		return false
	case h.ProducerID < 0:
		return true
	}
	// Sequence numbers follow offsets within the run, without wrapping.
	return f.BaseSequence >= 0 && int64(h.BaseSequence) == int64(r.last.BaseSequence)+int64(r.last.LastOffsetDelta)+1 &&
		int64(f.BaseSequence)+(h.LastOffset()-f.BaseOffset) <= math.MaxInt32
}

// add adds h, ending at end in the old segment, to the run.
func (r *emptyRun) add(h Header, end int) {
	r.n++
	r.last, r.end = h, end
	r.minTs, r.maxTs = min(r.minTs, h.FirstTimestamp), max(r.maxTs, h.MaxTimestamp)
}

// merged returns the empty batch standing for the run: the first batch's
// header spanning every offset of the run, its timestamps from the
// earliest first to the latest max.
func (r *emptyRun) merged() Batch {
	out := make(Batch, HeaderSize)
	copy(out, r.batch[:HeaderSize])
	be.PutUint32(out[offLength:], uint32(HeaderSize-lengthPrefix))
	be.PutUint16(out[offAttributes:], uint16(r.first.Attributes&^codecMask|AttrCompacted))
	be.PutUint32(out[offLastOffsetDelta:], uint32(r.last.LastOffset()-r.first.BaseOffset))
	be.PutUint64(out[offFirstTimestamp:], uint64(r.minTs))
	be.PutUint64(out[offMaxTimestamp:], uint64(r.maxTs))
	be.PutUint32(out[offRecordCount:], 0)
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out
}

// rewriteGroup writes the batches of g's segments, without the records
// keep drops, into one new segment file and swaps it in for them (see
// compaction_swap.go), telling throttle what it reads and writes. A group
// of one segment that loses nothing is left as it is.
func (l *Log) rewriteGroup(ctx context.Context, g []cleanable, keep func(Record, int64) recordFate, throttle func(context.Context, int) error) (rewriteStats, error) {
	var st rewriteStats
	first := g[0]
	logPath, idxPath, tidxPath := l.segPaths(first.s.base)
	tmpLog, tmpIdx, tmpTidx := logPath+cleanedSuffix, idxPath+cleanedSuffix, tidxPath+cleanedSuffix
	var f File
	abort := func(err error) (rewriteStats, error) {
		if f != nil {
			_ = f.Close()
		}
		for _, p := range []string{tmpLog, tmpIdx, tmpTidx} {
			_ = l.fs.Remove(p)
		}
		return rewriteStats{}, err
	}
	var w int64
	write := func(p []byte) error {
		_, err := f.WriteAt(p, w)
		w += int64(len(p))
		if err != nil || len(p) == 0 {
			return l.ioErr(err)
		}
		return throttle(ctx, len(p))
	}
	create := func() error {
		var err error
		if f, err = l.fs.OpenFile(tmpLog, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o644); err != nil {
			f = nil
			return l.ioErr(err)
		}
		return nil
	}
	if len(g) > 1 {
		if err := create(); err != nil {
			return abort(err)
		}
	}
	// emit writes out in place of the old bytes from pos to end, creating
	// the new file (with the old bytes before pos, unchanged) at the first
	// change: out is not those bytes themselves (a batch compactBatch left
	// as it was is returned as is, aliasing them). Only a group of one
	// creates it late, so pos and end are then first's.
	emit := func(pos, end int, out []byte) error {
		if f == nil && (len(out) != end-pos || &out[0] != &first.data[pos]) {
			if err := create(); err != nil {
				return err
			}
			for i := 0; i < pos; i += compactWriteChunk { // the batches kept whole so far
				if err := write(first.data[i:min(i+compactWriteChunk, pos)]); err != nil {
					return err
				}
			}
		}
		if f != nil {
			return write(out)
		}
		return nil
	}
	var run emptyRun
	flush := func() error {
		if run.n == 0 {
			return nil
		}
		out := run.batch
		if run.n > 1 {
			out = run.merged()
			st.merged += int64(run.n - 1)
		}
		err := emit(run.pos, run.end, out)
		run = emptyRun{}
		return err
	}
	for _, c := range g {
		for pos := 0; pos < len(c.data); {
			b, err := c.batchAt(pos)
			if err != nil {
				return abort(err)
			}
			if err := throttle(ctx, len(b)); err != nil {
				return abort(err)
			}
			maxTs := b.MaxTimestamp()
			nb, fates, err := compactBatch(b, func(r Record) recordFate { return keep(r, maxTs) })
			if err != nil {
				return abort(c.s.corruptAt(int64(pos), b.BaseOffset(), err))
			}
			st.superseded += fates[dropSuperseded]
			st.tombstones += fates[dropTombstone]
			h, err := ParseHeader(nb)
			if err != nil {
				return abort(c.s.corruptAt(int64(pos), b.BaseOffset(), err))
			}
			end := pos + len(b)
			switch {
			case h.RecordCount == 0 && run.accepts(h):
				run.add(h, end)
			case h.RecordCount == 0:
				if err := flush(); err != nil {
					return abort(err)
				}
				run = emptyRun{n: 1, pos: pos, end: end, first: h, last: h, batch: nb, minTs: h.FirstTimestamp, maxTs: h.MaxTimestamp}
			default:
				if err := flush(); err != nil {
					return abort(err)
				}
				if err := emit(pos, end, nb); err != nil {
					return abort(err)
				}
			}
			pos = end
		}
	}
	if err := flush(); err != nil {
		return abort(err)
	}
	if f == nil {
		return st, nil
	}
	if err := f.Sync(); err != nil {
		return abort(l.ioErr(err))
	}
	if err := l.writeCleanedIndexes(f, w, first.s.base, g[len(g)-1].next, tmpIdx, tmpTidx); err != nil {
		return abort(err)
	}
	if err := throttle(ctx, int(w)); err != nil { // the scan back
		return abort(err)
	}
	if err := f.Close(); err != nil {
		f = nil
		return abort(l.ioErr(err))
	}
	f = nil
	if l.compactSwapHook != nil {
		l.compactSwapHook()
	}
	swapped, err := l.swapCleaned(g, tmpLog, tmpIdx, tmpTidx)
	if !swapped {
		return abort(err)
	}
	st.written, st.size = true, w
	return st, err
}

// writeCleanedIndexes checks the new segment file f (size bytes, offsets
// base to next) by scanning it as recovery would, and writes its indexes
// from that scan.
func (l *Log) writeCleanedIndexes(f File, size, base, next int64, tmpIdx, tmpTidx string) error {
	m, err := f.Map(int(size), false)
	if err != nil {
		return l.ioErr(err)
	}
	defer m.Unmap()
	res := scanBatches(m.Bytes(), base, 0, base, 0, -1, l.opts.IndexInterval, nil, 0)
	if res.err != nil || res.end != size || res.next != next {
		return fmt.Errorf("segment: compacted segment %s does not scan back (end %d of %d, next %d, want %d): %v",
			segmentName(base), res.end, size, res.next, next, res.err)
	}
	for _, p := range []string{tmpIdx, tmpTidx} {
		_ = l.fs.Remove(p)
	}
	ix, err := openIndexFile(l.fs, tmpIdx, offsetEntrySize, l.opts.MaxIndexBytes, true, 0)
	if err != nil {
		return l.ioErr(err)
	}
	defer ix.close()
	tx, err := openIndexFile(l.fs, tmpTidx, timeEntrySize, l.opts.MaxIndexBytes/offsetEntrySize*timeEntrySize, true, 0)
	if err != nil {
		return l.ioErr(err)
	}
	defer tx.close()
	oi, ti := offsetIndex{ix}, timeIndex{tx}
	for i := range res.idxRel {
		if err := oi.add(res.idxRel[i], res.idxPos[i]); err != nil {
			return l.ioErr(err)
		}
		ix.publish()
		if err := ti.add(res.tidxTs[i], res.idxRel[i]); err != nil {
			return l.ioErr(err)
		}
		tx.publish()
	}
	for _, x := range []*indexFile{ix, tx} {
		m, err := x.persist(true)
		if err != nil {
			return l.ioErr(err)
		}
		if m != nil {
			_ = m.Unmap()
		}
	}
	return nil
}

// compactBatch returns b without the records fate drops, as a compacted
// batch (AttrCompacted; see above), and how many records met each fate. It
// returns b itself when it drops none.
func compactBatch(b Batch, fate func(Record) recordFate) (Batch, [3]int64, error) {
	var n [3]int64
	var it Records
	it.Reset(b)
	var kept [][]byte
	size := 0
	for it.Next() {
		f := fate(it.Record())
		n[f]++
		if f == keepRecord {
			raw := it.raw()
			kept = append(kept, raw)
			size += len(raw)
		}
	}
	if err := it.Err(); err != nil {
		return nil, n, err
	}
	if n[dropSuperseded]+n[dropTombstone] == 0 {
		return b, n, nil
	}
	section := make([]byte, 0, size)
	for _, r := range kept {
		section = append(section, r...)
	}
	h, err := ParseHeader(b)
	if err != nil {
		return nil, n, err
	}
	codec := h.Compression()
	if codec != CodecNone {
		comp, err := compressRecords(nil, codec, section)
		if err == nil && len(comp) < len(section) {
			section = comp
		} else {
			codec = CodecNone
		}
	}
	out := make(Batch, HeaderSize+len(section))
	copy(out, b[:HeaderSize])
	copy(out[HeaderSize:], section)
	attrs := h.Attributes&^codecMask | int16(codec) | AttrCompacted
	be.PutUint16(out[offAttributes:], uint16(attrs))
	be.PutUint32(out[offRecordCount:], uint32(len(kept)))
	be.PutUint32(out[offLength:], uint32(len(out)-lengthPrefix))
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return out, n, nil
}
