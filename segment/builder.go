package segment

import (
	"encoding/binary"
	"hash/crc32"
)

// BuilderOptions configures a batch; zero ProducerID means not idempotent (stored as -1).
type BuilderOptions struct {
	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32
	Attributes    int16 // codec bits excepted: see Compression
	// Compression compresses the records section (see Codec). A batch that
	// does not shrink is built uncompressed (Build says which by its codec).
	Compression Codec
}

// Builder accumulates records into one batch for a producer. It is not safe
// for concurrent use.
type Builder struct {
	opts    BuilderOptions
	buf     []byte // header space + encoded records
	n       int
	firstTs int64
	maxTs   int64
	built   bool // buf was handed out by Build; Reset must not reuse it
	// comp is the compressed batch Build made of buf's records (header
	// space first), nil until then and after every Add; compN its records.
	comp   []byte
	compN  int
	maxCap int // Add's doubling stops here (0: no limit); see LimitGrowth
}

// NewBuilder starts an empty batch.
func NewBuilder(opts BuilderOptions) *Builder {
	b := &Builder{}
	b.Reset(opts)
	return b
}

// Reset starts a new empty batch. A Batch returned by an earlier Build stays
// valid: its buffer is never reused.
func (b *Builder) Reset(opts BuilderOptions) {
	capHint := 4096
	if b.built {
		capHint = cap(b.buf)
		b.buf = nil
	}
	if b.buf == nil {
		b.buf = make([]byte, HeaderSize, capHint)
	}
	b.buf = b.buf[:HeaderSize]
	b.opts, b.n, b.firstTs, b.maxTs, b.built = opts, 0, 0, 0, false
	b.comp = nil
}

// RecordBatchSize is the size of a batch holding only this record,
// uncompressed: what a limit on batches (a topic's max.message.bytes)
// must at least allow for it.
func RecordBatchSize(key, value []byte, headers []RecordHeader) int {
	body := 1 + varintLen(0) + varintLen(0) + bytesLen(key) + bytesLen(value) + varintLen(int64(len(headers)))
	for _, h := range headers {
		body += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return HeaderSize + varintLen(int64(body)) + body
}

// Add appends one record. A nil key or value is stored as null.
func (b *Builder) Add(timestampMs int64, key, value []byte, headers []RecordHeader) {
	if b.built {
		// Keep an earlier Build's Batch intact.
		nb := make([]byte, len(b.buf), cap(b.buf))
		copy(nb, b.buf)
		b.buf, b.built = nb, false
	}
	b.comp = nil
	if b.n == 0 {
		b.firstTs, b.maxTs = timestampMs, timestampMs
	} else if timestampMs > b.maxTs {
		b.maxTs = timestampMs
	}
	tsDelta := timestampMs - b.firstTs
	body := 1 + varintLen(tsDelta) + varintLen(int64(b.n)) +
		bytesLen(key) + bytesLen(value) + varintLen(int64(len(headers)))
	for _, h := range headers {
		body += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	buf := b.buf
	if need := len(buf) + varintLen(int64(body)) + body; need > cap(buf) {
		// Double, rather than append's quarter steps for large slices: a
		// batch filled from a small buffer copies its bytes about once.
		newCap := 2 * cap(buf)
		if b.maxCap > 0 {
			newCap = min(newCap, b.maxCap)
		}
		nb := make([]byte, len(buf), max(need, newCap))
		copy(nb, buf)
		buf = nb
	}
	buf = binary.AppendVarint(buf, int64(body))
	buf = append(buf, 0) // attributes
	buf = binary.AppendVarint(buf, tsDelta)
	buf = binary.AppendVarint(buf, int64(b.n))
	buf = appendBytes(buf, key)
	buf = appendBytes(buf, value)
	buf = binary.AppendVarint(buf, int64(len(headers)))
	for _, h := range headers {
		buf = binary.AppendVarint(buf, int64(len(h.Key)))
		buf = append(buf, h.Key...)
		buf = appendBytes(buf, h.Value)
	}
	b.buf = buf
	b.n++
}

// SetOptions changes the producer fields (id, epoch, base sequence,
// attributes) that Build stamps into the header. The records do not depend
// on them, so a producer can add records first and decide its sequence when
// the batch is sent. Calling Build again after SetOptions re-stamps the same
// bytes in place: the Batch of the earlier Build changes with it, so do that
// only once nothing reads the earlier Batch.
func (b *Builder) SetOptions(opts BuilderOptions) { b.opts = opts }

// Recycle starts a new empty batch like Reset, but reuses the buffer even if
// a Batch was built from it: the caller guarantees that no Batch from this
// builder is used any more. It keeps the buffer's capacity (at least capHint).
func (b *Builder) Recycle(opts BuilderOptions, capHint int) {
	if cap(b.buf) < max(capHint, HeaderSize) {
		b.buf = make([]byte, HeaderSize, max(capHint, HeaderSize))
	}
	b.buf = b.buf[:HeaderSize]
	b.opts, b.n, b.firstTs, b.maxTs, b.built = opts, 0, 0, 0, false
	b.comp = nil
}

// LimitGrowth caps the buffer Add grows by doubling at n bytes (0: no
// limit), so that a batch that ends at its size limit does not sit in a
// buffer up to twice as large. A record that does not fit in n still gets
// the room it needs. The limit outlives Reset and Recycle.
func (b *Builder) LimitGrowth(n int) { b.maxCap = n }

// Cap is the capacity of the builder's buffer.
func (b *Builder) Cap() int { return cap(b.buf) }

// Len is the number of records added; Size the encoded size so far,
// uncompressed.
func (b *Builder) Len() int  { return b.n }
func (b *Builder) Size() int { return len(b.buf) }

// Build encodes the batch (base offset 0, leader epoch 0, CRC set) and returns
// it. The Batch owns its bytes: later Add or Reset calls do not modify it.
// Building a batch without records yields an invalid batch; callers check Len.
// With Compression, the records are compressed once; a second Build (after
// SetOptions) re-stamps the same compressed bytes.
func (b *Builder) Build() Batch {
	if c := b.opts.Compression; c != CodecNone && b.n > 0 {
		if b.comp == nil || b.compN != b.n {
			b.comp, b.compN = nil, b.n
			out, err := compressRecords(make([]byte, HeaderSize), c, b.buf[HeaderSize:])
			if err == nil && len(out) < len(b.buf) {
				b.comp = out
			}
		}
		if b.comp != nil {
			return b.stamp(b.comp, c)
		}
	}
	b.built = true
	return b.stamp(b.buf, CodecNone)
}

// stamp writes the header into h (header space, then records compressed
// with c) and returns the batch.
func (b *Builder) stamp(h []byte, c Codec) Batch {
	be.PutUint64(h[offBaseOffset:], 0)
	be.PutUint32(h[offLength:], uint32(len(h)-lengthPrefix))
	be.PutUint32(h[offLeaderEpoch:], 0)
	h[offMagic] = FormatVersion
	be.PutUint16(h[offAttributes:], uint16(b.opts.Attributes&^codecMask)|uint16(c))
	be.PutUint32(h[offLastOffsetDelta:], uint32(int32(b.n-1)))
	be.PutUint64(h[offFirstTimestamp:], uint64(b.firstTs))
	be.PutUint64(h[offMaxTimestamp:], uint64(b.maxTs))
	pid, pepoch, seq := b.opts.ProducerID, b.opts.ProducerEpoch, b.opts.BaseSequence
	if pid == 0 {
		pid, pepoch, seq = -1, -1, -1
	}
	be.PutUint64(h[offProducerID:], uint64(pid))
	be.PutUint16(h[offProducerEpoch:], uint16(pepoch))
	be.PutUint32(h[offBaseSequence:], uint32(seq))
	be.PutUint32(h[offRecordCount:], uint32(int32(b.n)))
	be.PutUint32(h[offCRC:], crc32.Checksum(h[offAttributes:], castagnoli))
	return Batch(h[:len(h):len(h)])
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func bytesLen(p []byte) int {
	if p == nil {
		return 1
	}
	return varintLen(int64(len(p))) + len(p)
}

func appendBytes(buf, p []byte) []byte {
	if p == nil {
		return binary.AppendVarint(buf, -1)
	}
	buf = binary.AppendVarint(buf, int64(len(p)))
	return append(buf, p...)
}
