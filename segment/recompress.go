package segment

import (
	"fmt"
	"hash/crc32"
)

// Recompress returns the batch with its records section stored in codec c
// (CodecNone: uncompressed): what a leader stores for a topic whose
// compression.type names a codec, whatever the producer sent. Everything
// else is kept: the records section byte for byte once decompressed (keys,
// values, headers, timestamp and offset deltas), the header's offsets,
// timestamps, record count, producer id, epoch and base sequence, and every
// attribute bit but the codec's. Length and CRC are recomputed.
//
// As a producer's Builder does, a batch that c would not shrink is stored
// uncompressed instead: Recompress never returns a batch larger than the
// uncompressed one, and the result's codec (Batch.Compression) is c or
// CodecNone. A batch whose result would be itself (already in c, or sent
// uncompressed and not shrunk by c) is returned as it is, not copied;
// otherwise the result is a new buffer.
//
// b must be one whole batch, validated (Validate); its records are
// decompressed by the readers' decoder (at most MaxDecompressedBytes, a
// corruption error otherwise). A codec this build does not read or write,
// b's or c, is ErrUnsupportedCodec.
func (b Batch) Recompress(c Codec) (Batch, error) {
	h, err := checkShape(b, lengthPrefix+maxLength)
	if err != nil {
		return nil, err
	}
	src := h.Compression()
	if src == c {
		return b, nil
	}
	if !c.Supported() {
		return nil, fmt.Errorf("%w %d", ErrUnsupportedCodec, c)
	}
	records := []byte(b[HeaderSize:])
	if src != CodecNone {
		if records, err = decompressRecords(src, records); err != nil {
			return nil, err
		}
	}
	var out []byte
	stored := c
	if c != CodecNone {
		if out, err = compressRecords(make([]byte, HeaderSize), c, records); err != nil {
			return nil, err
		}
		if len(out)-HeaderSize >= len(records) {
			stored = CodecNone
		}
	}
	if stored == CodecNone {
		if src == CodecNone {
			return b, nil
		}
		out = append(make([]byte, HeaderSize, HeaderSize+len(records)), records...)
	}
	copy(out, b[:HeaderSize])
	be.PutUint32(out[offLength:], uint32(len(out)-lengthPrefix))
	be.PutUint16(out[offAttributes:], be.Uint16(b[offAttributes:])&^codecMask|uint16(stored))
	be.PutUint32(out[offCRC:], crc32.Checksum(out[offAttributes:], castagnoli))
	return Batch(out[:len(out):len(out)]), nil
}
