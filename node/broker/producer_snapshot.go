package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"

	"paymentlog/segment"
)

// ProducerSnapshotFile is the producer-state snapshot in a partition
// directory: the stable part of producerState (every batch below its stable
// end, which is at or below the HW; the snapshot may end further, up to the
// HW, when only batches without a producer id follow: snapshotEnd), written
// when the partition is closed cleanly and, while it runs, whenever
// Config.ProducerSnapshotBatches more batches have become stable or the log
// grew by Config.ProducerSnapshotBytes (maybeSnapshot). Opening the partition loads it
// and replays only the batches from the stable end on, instead of every
// batch header from the log start.
//
// Format (version 2, big-endian), replaced atomically (segment.WriteCheckpoint):
//
//	offset  size  field
//	0       4     magic "PLPS"
//	4       1     version (2; 1 is read too)
//	5       8     stable end: the state covers the batches below this offset
//	13      8     anchor base offset  \  the batch that ends at stable end - 1
//	21      8     anchor last offset   | (its fields outside and inside the
//	29      4     anchor leader epoch  | CRC): the snapshot applies to a log
//	33      4     anchor batch CRC    /  holding that very batch there
//	37      4     producer count N
//	41            N producers, each: producer id (8), producer epoch (2),
//	              last timestamp (8, version 2 only: the largest record
//	              timestamp of its batches in ms, for expiry; -1 unknown),
//	              batch count n (1, 1-5), then n batches oldest first:
//	              first sequence (4), last sequence (4), base offset (8),
//	              last offset (8)
//	end-4   4     CRC-32C (Castagnoli) of every byte before it
//
// A version 1 snapshot (written before producer ids expired) has no last
// timestamps: its producers load with -1 and count as active from the
// first expiry check on (producerState.expire).
//
// A snapshot is mostly a shortcut: one that is missing, unreadable, corrupt,
// of another version, or whose anchor batch is not in the log (the log was
// truncated below it and rewritten, or lost its tail in a crash) is ignored
// and the whole log is replayed. After retention it is more: it is written
// before segments are deleted (retention.go) and is then the only record of
// the producers whose batches were in them. A snapshot whose stable end is
// at or below the log start offset is therefore loaded without its anchor
// (retention deleted that batch; what it covers is committed, below the
// HW, so the same on every replica) and the log replayed from its start. A log that holds the anchor batch (same
// offsets, leader epoch and CRC) holds the same batches below it, as leader
// epochs make logs that agree on a batch agree on everything before it.
const ProducerSnapshotFile = "producer-state.snapshot"

const (
	snapshotMagic      = "PLPS"
	snapshotVersion    = 2
	snapshotHeaderSize = 41
	snapshotBatchSize  = 24
)

var errBadSnapshot = errors.New("broker: bad producer snapshot")

// snapshotAnchor identifies the batch that ends at a snapshot's stable end.
type snapshotAnchor struct {
	baseOffset, lastOffset int64
	leaderEpoch            int32
	crc                    uint32
}

// producerSnapshot is a decoded snapshot.
type producerSnapshot struct {
	stableEnd int64
	anchor    snapshotAnchor
	producers map[int64]*producerEntry
}

func encodeProducerSnapshot(s producerSnapshot) []byte {
	be := binary.BigEndian
	b := make([]byte, 0, snapshotHeaderSize+len(s.producers)*(19+producerBatches*snapshotBatchSize)+4)
	b = append(b, snapshotMagic...)
	b = append(b, snapshotVersion)
	b = be.AppendUint64(b, uint64(s.stableEnd))
	b = be.AppendUint64(b, uint64(s.anchor.baseOffset))
	b = be.AppendUint64(b, uint64(s.anchor.lastOffset))
	b = be.AppendUint32(b, uint32(s.anchor.leaderEpoch))
	b = be.AppendUint32(b, s.anchor.crc)
	b = be.AppendUint32(b, uint32(len(s.producers)))
	for pid, e := range s.producers {
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(e.epoch))
		b = be.AppendUint64(b, uint64(e.lastTs))
		b = append(b, byte(len(e.batches)))
		for _, x := range e.batches {
			b = be.AppendUint32(b, uint32(x.firstSeq))
			b = be.AppendUint32(b, uint32(x.lastSeq))
			b = be.AppendUint64(b, uint64(x.baseOffset))
			b = be.AppendUint64(b, uint64(x.lastOffset))
		}
	}
	return be.AppendUint32(b, crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
}

// decodeProducerSnapshot parses a snapshot, checking every length against
// the bytes there are before allocating for it.
func decodeProducerSnapshot(data []byte) (producerSnapshot, error) {
	be := binary.BigEndian
	bad := func(why string) (producerSnapshot, error) {
		return producerSnapshot{}, fmt.Errorf("%w: %s", errBadSnapshot, why)
	}
	if len(data) < snapshotHeaderSize+4 {
		return bad("too short")
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)) != be.Uint32(data[len(body):]) {
		return bad("checksum mismatch")
	}
	version := body[4]
	if string(body[:4]) != snapshotMagic || version < 1 || version > snapshotVersion {
		return bad("unknown magic or version")
	}
	prodSize := 19 // producer id, epoch, last timestamp, batch count
	if version == 1 {
		prodSize = 11 // no last timestamp
	}
	s := producerSnapshot{
		stableEnd: int64(be.Uint64(body[5:])),
		anchor: snapshotAnchor{baseOffset: int64(be.Uint64(body[13:])), lastOffset: int64(be.Uint64(body[21:])),
			leaderEpoch: int32(be.Uint32(body[29:])), crc: be.Uint32(body[33:])},
	}
	if s.stableEnd <= 0 || s.anchor.baseOffset < 0 || s.anchor.baseOffset > s.anchor.lastOffset ||
		s.anchor.lastOffset != s.stableEnd-1 {
		return bad("inconsistent stable end and anchor")
	}
	n := be.Uint32(body[37:])
	rest := body[snapshotHeaderSize:]
	if uint64(n)*uint64(prodSize+snapshotBatchSize) > uint64(len(rest)) {
		return bad("producer count larger than the file")
	}
	s.producers = make(map[int64]*producerEntry, n)
	for range n {
		if len(rest) < prodSize {
			return bad("truncated producer")
		}
		pid, epoch, lastTs := int64(be.Uint64(rest)), int16(be.Uint16(rest[8:])), int64(-1)
		if version >= 2 {
			lastTs = int64(be.Uint64(rest[10:]))
		}
		k := int(rest[prodSize-1])
		rest = rest[prodSize:]
		if pid < 0 || lastTs < -1 || k < 1 || k > producerBatches || len(rest) < k*snapshotBatchSize || s.producers[pid] != nil {
			return bad("bad producer entry")
		}
		e := &producerEntry{epoch: epoch, lastTs: lastTs, batches: make([]seqBatch, 0, producerBatches)}
		for range k {
			x := seqBatch{firstSeq: int32(be.Uint32(rest)), lastSeq: int32(be.Uint32(rest[4:])),
				baseOffset: int64(be.Uint64(rest[8:])), lastOffset: int64(be.Uint64(rest[16:]))}
			rest = rest[snapshotBatchSize:]
			if x.firstSeq < 0 || x.lastSeq < 0 || x.baseOffset < 0 || x.lastOffset < x.baseOffset || x.lastOffset >= s.stableEnd {
				return bad("bad batch")
			}
			e.batches = append(e.batches, x)
		}
		s.producers[pid] = e
	}
	if len(rest) != 0 {
		return bad("trailing bytes")
	}
	return s, nil
}

// snapshotOf returns the stable part of s as a snapshot anchored in lg and
// ending at snapshotEnd(s, hw, lg), or ok=false when there is nothing worth
// writing (it would end at 0) or the state is unknown.
func snapshotOf(s *producerState, lg *segment.Log, hw int64) (producerSnapshot, bool) {
	end := snapshotEnd(s, hw, lg.LogEndOffset())
	if end <= 0 || s.unknown != nil {
		return producerSnapshot{}, false
	}
	a, ok := anchorAt(lg, end)
	if !ok {
		return producerSnapshot{}, false
	}
	return producerSnapshot{stableEnd: end, anchor: a, producers: s.stable}, true
}

// snapshotEnd is where a snapshot of s may end: its stable end, or beyond
// it up to the HW (and the log end) as long as no idempotent batch lies in
// between (every one at or above the stable end is pending): a stretch of
// other batches changes no producer's state, so the stable state is the
// log's up to there too. Without it a log written without idempotence
// would never get a snapshot, and every restart would replay every batch
// header from the log start.
func snapshotEnd(s *producerState, hw, leo int64) int64 {
	end := min(hw, leo)
	if len(s.pending) > 0 {
		end = min(end, s.pending[0].baseOffset)
	}
	return max(s.stableEnd, end)
}

// anchorAt identifies the batch of lg that ends at end-1 (ok=false if none).
func anchorAt(lg *segment.Log, end int64) (snapshotAnchor, bool) {
	if end <= lg.LogStartOffset() || end > lg.LogEndOffset() {
		return snapshotAnchor{}, false
	}
	v, err := lg.Read(end-1, 1, -1)
	if err != nil {
		return snapshotAnchor{}, false
	}
	defer v.Release()
	h, err := segment.ParseHeader(v.Data)
	if err != nil || h.LastOffset() != end-1 {
		return snapshotAnchor{}, false
	}
	return snapshotAnchor{baseOffset: h.BaseOffset, lastOffset: h.LastOffset(), leaderEpoch: h.LeaderEpoch, crc: h.CRC}, true
}

// writeProducerSnapshot stores the stable part of s in dir (nothing when
// there is none).
func writeProducerSnapshot(fs segment.FS, dir string, s *producerState, lg *segment.Log, hw int64) error {
	snap, ok := snapshotOf(s, lg, hw)
	if !ok {
		return nil
	}
	return segment.WriteCheckpoint(fs, filepath.Join(dir, ProducerSnapshotFile), encodeProducerSnapshot(snap))
}

// loadProducerSnapshot returns a producer state from dir's snapshot whose
// anchor batch lg holds, with nothing pending (the caller replays from
// stableEnd), or ok=false and why not.
func loadProducerSnapshot(fs segment.FS, dir string, lg *segment.Log) (*producerState, bool, error) {
	data, err := segment.ReadCheckpoint(fs, filepath.Join(dir, ProducerSnapshotFile))
	if err != nil {
		return nil, false, err
	}
	snap, err := decodeProducerSnapshot(data)
	if err != nil {
		return nil, false, err
	}
	if snap.stableEnd > lg.LogStartOffset() {
		if a, ok := anchorAt(lg, snap.stableEnd); !ok || a != snap.anchor {
			return nil, false, nil // the log no longer holds the batch the snapshot ends with
		}
	}
	// Otherwise retention deleted the anchor batch (and maybe more): the
	// snapshot holds the state of batches that are gone, which is why it
	// was written before they were (partition.deleteBeforeLocked); every
	// batch the log holds comes after it.
	s := newProducerState()
	s.stable, s.stableEnd = snap.producers, snap.stableEnd
	for pid, e := range snap.producers {
		s.producers[pid] = &producerEntry{epoch: e.epoch, lastTs: e.lastTs, batches: append(make([]seqBatch, 0, producerBatches), e.batches...)}
	}
	return s, true, nil
}

// maybeSnapshot writes the producer snapshot when it would end further than
// the last one and at least every batches have become stable since, or the
// log grew by everyBytes, so that a restart after a crash replays about
// that many batches or bytes at most (plus those above the HW). The
// snapshot is encoded under appendMu (memory only) and written after.
func (p *partition) maybeSnapshot(every uint64, everyBytes int64) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	var data []byte
	// Both lowered when the log shrinks (a truncation, a retention pass).
	size, leo, hw := p.log.Size(), p.log.LogEndOffset(), p.hw()
	p.snapSize, p.snapEnd = min(p.snapSize, size), min(p.snapEnd, leo)
	s := p.producers
	if snapshotEnd(s, hw, leo) > p.snapEnd && (s.stableBatches >= p.snapAt+every || size >= p.snapSize+everyBytes) {
		if snap, ok := snapshotOf(s, p.log, hw); ok {
			data = encodeProducerSnapshot(snap)
			p.snapAt, p.snapSize, p.snapEnd = s.stableBatches, size, snap.stableEnd
		}
	}
	p.appendMu.Unlock()
	if data == nil {
		return
	}
	if err := segment.WriteCheckpoint(p.fs(), filepath.Join(p.dir, ProducerSnapshotFile), data); err != nil {
		p.lg.Warn("writing the producer snapshot", "err", err)
	}
}
