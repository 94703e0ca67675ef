package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Codec is a batch's compression codec: the low three bits of its Attributes
// (Kafka's numbering). A compressed batch's header is as in an uncompressed
// one (RecordCount, timestamps, producer fields), and the CRC covers the
// stored, compressed bytes; only the records section after the header is
// compressed, as one block:
//
//	lz4:  uint32 big-endian length of the records section, then one LZ4 block
//	zstd: one zstd frame (its header holds the content size)
//
// Readers decompress into a buffer of their own (Records), at most
// MaxDecompressedBytes.
type Codec uint8

const (
	CodecNone Codec = 0
	CodecLZ4  Codec = 3
	CodecZstd Codec = 4

	codecMask = 0x07
)

// MaxDecompressedBytes bounds a compressed batch's records section once
// decompressed: a batch that claims or yields more is refused as corrupt
// (a small batch must not make a reader allocate gigabytes).
const MaxDecompressedBytes = 64 << 20

// ErrUnsupportedCodec is a batch whose codec bits name no codec this build
// reads (gzip and snappy, 1 and 2 in Kafka's numbering, included).
var ErrUnsupportedCodec = errors.New("segment: unsupported compression codec")

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// Supported reports whether this build reads and writes c.
func (c Codec) Supported() bool { return c == CodecNone || c == CodecLZ4 || c == CodecZstd }

// ParseCodec parses a codec name: none, lz4 or zstd.
func ParseCodec(s string) (Codec, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "none", "":
		return CodecNone, nil
	case "lz4":
		return CodecLZ4, nil
	case "zstd":
		return CodecZstd, nil
	}
	return CodecNone, fmt.Errorf("unknown compression %q (want none, lz4 or zstd)", s)
}

// Compression is the batch's codec.
func (h Header) Compression() Codec { return Codec(h.Attributes & codecMask) }

// Compression is the batch's codec (the header must be there).
func (b Batch) Compression() Codec { return Codec(be.Uint16(b[offAttributes:]) & codecMask) }

var (
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
	zstdDecOnce sync.Once
	zstdDec     *zstd.Decoder
)

// lz4Compressors keep their hash tables (64 KiB each) between batches.
var lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// zstdEncoder is shared: EncodeAll is safe for concurrent use.
func zstdEncoder() *zstd.Encoder {
	zstdEncOnce.Do(func() {
		var err error
		zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(1), zstd.WithZeroFrames(true))
		if err != nil {
			panic("segment: zstd encoder: " + err.Error())
		}
	})
	return zstdEnc
}

// zstdDecoder is shared: DecodeAll is safe for concurrent use.
func zstdDecoder() *zstd.Decoder {
	zstdDecOnce.Do(func() {
		var err error
		zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderMaxMemory(MaxDecompressedBytes), zstd.WithDecoderMaxWindow(MaxDecompressedBytes))
		if err != nil {
			panic("segment: zstd decoder: " + err.Error())
		}
	})
	return zstdDec
}

// compressRecords appends the compressed form of records to dst.
func compressRecords(dst []byte, c Codec, records []byte) ([]byte, error) {
	switch c {
	case CodecLZ4:
		start := len(dst)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(records)))
		bound := lz4.CompressBlockBound(len(records))
		dst = grow(dst, bound)
		comp := lz4Compressors.Get().(*lz4.Compressor)
		n, err := comp.CompressBlock(records, dst[len(dst):len(dst)+bound])
		lz4Compressors.Put(comp)
		if err != nil {
			return dst[:start], fmt.Errorf("segment: lz4: %w", err)
		}
		if n == 0 && len(records) > 0 {
			// Not with a destination of CompressBlockBound bytes.
			return dst[:start], errors.New("segment: lz4: block bound too small")
		}
		return dst[:len(dst)+n], nil
	case CodecZstd:
		// Room for a fourth of the records: JSON shrinks further.
		return zstdEncoder().EncodeAll(records, grow(dst, len(records)/4)), nil
	}
	return dst, fmt.Errorf("%w %d", ErrUnsupportedCodec, c)
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), len(b)+n)
	copy(nb, b)
	return nb
}

// decompressRecords returns the records section of a compressed batch in a
// new buffer (the records a reader hands out alias it).
func decompressRecords(c Codec, comp []byte) ([]byte, error) {
	switch c {
	case CodecLZ4:
		if len(comp) < 4 {
			return nil, corruptf("lz4 records section of %d bytes", len(comp))
		}
		n := binary.BigEndian.Uint32(comp)
		if n > MaxDecompressedBytes {
			return nil, corruptf("lz4 records section claims %d bytes, more than %d", n, MaxDecompressedBytes)
		}
		out := make([]byte, n)
		got, err := lz4.UncompressBlock(comp[4:], out)
		if err != nil {
			return nil, corruptf("lz4: %v", err)
		}
		if got != int(n) {
			return nil, corruptf("lz4 records section of %d bytes, %d claimed", got, n)
		}
		return out, nil
	case CodecZstd:
		out, err := zstdDecoder().DecodeAll(comp, nil)
		if err != nil {
			return nil, corruptf("zstd: %v", err)
		}
		if len(out) > MaxDecompressedBytes {
			return nil, corruptf("zstd records section of %d bytes, more than %d", len(out), MaxDecompressedBytes)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w %d", ErrUnsupportedCodec, c)
}
