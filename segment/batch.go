package segment

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// FormatVersion (magic) of the record batch format.
const FormatVersion = 2

// Header layout (see the package doc). Part of the on-disk and wire format.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offRecordCount     = 57

	// HeaderSize is the size of a batch header; records follow it.
	HeaderSize = 61
	// lengthPrefix is the number of bytes before and including the Length field.
	lengthPrefix = 12
	// minLength is the smallest valid Length field (a header without records).
	minLength = HeaderSize - lengthPrefix
	// maxLength bounds the Length field so that garbage is never trusted as a size.
	maxLength = 1<<30 - lengthPrefix
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

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

// AttrCompacted is the Attributes bit of a batch the log cleaner rewrote
// (compaction.go): it may hold fewer records than its offsets span, down to
// none, and its records' offset deltas increase with gaps. Only the cleaner
// sets it; a leader refuses it from producers. It is paymentlog's own bit
// (Kafka leaves bit 7 unused).
const AttrCompacted int16 = 1 << 7

// Compacted reports whether the cleaner rewrote the batch (AttrCompacted).
func (h Header) Compacted() bool { return h.Attributes&AttrCompacted != 0 }

// Compacted reports whether the cleaner rewrote the batch (the header must
// be there).
func (b Batch) Compacted() bool { return int16(be.Uint16(b[offAttributes:]))&AttrCompacted != 0 }

// Batch is one encoded record batch: header + records. It aliases its bytes.
type Batch []byte

var be = binary.BigEndian

// ParseHeader decodes the header at the start of b without validating the CRC.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, corruptf("header needs %d bytes, have %d", HeaderSize, len(b))
	}
	h := Header{
		BaseOffset:      int64(be.Uint64(b[offBaseOffset:])),
		Length:          int32(be.Uint32(b[offLength:])),
		LeaderEpoch:     int32(be.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             be.Uint32(b[offCRC:]),
		Attributes:      int16(be.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(be.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:  int64(be.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:    int64(be.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(be.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(be.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(be.Uint32(b[offBaseSequence:])),
		RecordCount:     int32(be.Uint32(b[offRecordCount:])),
	}
	if err := h.check(); err != nil {
		return h, err
	}
	return h, nil
}

// check validates the structural header fields (not the CRC).
func (h Header) check() error {
	switch {
	case h.Length < minLength || h.Length > maxLength:
		return corruptf("invalid batch length %d", h.Length)
	case h.Magic != FormatVersion:
		return corruptf("unknown format version %d", h.Magic)
	case h.LastOffsetDelta < 0:
		return corruptf("negative last offset delta %d", h.LastOffsetDelta)
	case h.Compacted() && (h.RecordCount < 0 || int64(h.RecordCount) > int64(h.LastOffsetDelta)+1):
		return corruptf("compacted batch: record count %d above last offset delta %d + 1", h.RecordCount, h.LastOffsetDelta)
	case !h.Compacted() && (h.RecordCount <= 0 || int64(h.RecordCount) != int64(h.LastOffsetDelta)+1):
		return corruptf("record count %d does not match last offset delta %d", h.RecordCount, h.LastOffsetDelta)
	case h.BaseOffset < 0:
		return corruptf("negative base offset %d", h.BaseOffset)
	}
	return nil
}

// Validate checks the length field, the structural header fields and the CRC-32C.
func (b Batch) Validate() error {
	h, err := ParseHeader(b)
	if err != nil {
		return err
	}
	size := lengthPrefix + int(h.Length)
	if size > len(b) {
		return fmt.Errorf("%w: batch of %d bytes truncated to %d", ErrTornTail, size, len(b))
	}
	if got := crc32.Checksum(b[offAttributes:size], castagnoli); got != h.CRC {
		return corruptf("crc mismatch: stored %08x, computed %08x", h.CRC, got)
	}
	return nil
}

// Size is the total encoded size of the batch according to its length field.
func (b Batch) Size() int { return lengthPrefix + int(int32(be.Uint32(b[offLength:]))) }

// BaseOffset, LastOffset, LeaderEpoch read header fields directly.
func (b Batch) BaseOffset() int64 { return int64(be.Uint64(b[offBaseOffset:])) }
func (b Batch) LastOffset() int64 {
	return b.BaseOffset() + int64(int32(be.Uint32(b[offLastOffsetDelta:])))
}
func (b Batch) LeaderEpoch() int32 { return int32(be.Uint32(b[offLeaderEpoch:])) }

// MaxTimestamp and RecordCount read header fields directly.
func (b Batch) MaxTimestamp() int64 { return int64(be.Uint64(b[offMaxTimestamp:])) }
func (b Batch) RecordCount() int32  { return int32(be.Uint32(b[offRecordCount:])) }

// SetBaseOffset and SetLeaderEpoch stamp fields outside the CRC in place.
func (b Batch) SetBaseOffset(off int64) { be.PutUint64(b[offBaseOffset:], uint64(off)) }
func (b Batch) SetLeaderEpoch(e int32)  { be.PutUint32(b[offLeaderEpoch:], uint32(e)) }

// SplitBatches walks buf batch by batch, calling fn for each whole, CRC-valid
// batch. It returns the number of bytes consumed and an error wrapping
// ErrCorrupt if a batch is invalid, or ErrTornTail if buf ends mid-batch.
func SplitBatches(buf []byte, fn func(Batch) error) (int, error) {
	pos := 0
	for pos < len(buf) {
		b, err := nextBatch(buf, pos)
		if err != nil {
			return pos, err
		}
		if err := b.Validate(); err != nil {
			return pos, fmt.Errorf("batch at byte %d: %w", pos, err)
		}
		if fn != nil {
			if err := fn(b); err != nil {
				return pos, err
			}
		}
		pos += len(b)
	}
	return pos, nil
}

// nextBatch returns the batch starting at buf[pos:], bounded by its length
// field, after checking the header structure (not the CRC).
func nextBatch(buf []byte, pos int) (Batch, error) {
	rest := buf[pos:]
	if len(rest) < lengthPrefix {
		return nil, fmt.Errorf("%w: %d bytes at byte %d, too short for a batch", ErrTornTail, len(rest), pos)
	}
	length := int32(be.Uint32(rest[offLength:]))
	if length < minLength || length > maxLength {
		return nil, corruptf("invalid batch length %d at byte %d", length, pos)
	}
	size := lengthPrefix + int(length)
	if size > len(rest) {
		return nil, fmt.Errorf("%w: batch of %d bytes at byte %d but only %d remain", ErrTornTail, size, pos, len(rest))
	}
	h, err := ParseHeader(rest)
	if err != nil {
		return nil, fmt.Errorf("batch at byte %d: %w", pos, err)
	}
	_ = h
	return Batch(rest[:size:size]), nil
}
