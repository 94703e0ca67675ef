package broker

import (
	"fmt"

	"paymentlog/segment"
	"paymentlog/wire"
)

// recompress rewrites a produced batch, validated and its records checked,
// into its topic's compression.type (pol.Codec; segment.Batch.Recompress:
// same records, producer fields and attributes but the codec's, new CRC;
// one the codec would not shrink is stored uncompressed). It returns the
// batch to store, a new buffer unless nothing changed, and its header.
//
// The stored size is checked again, as Kafka does after recompressing: a
// batch sent compressed to an uncompressed topic may no longer fit the
// topic's max.message.bytes or the node's limit (RecordTooLarge, naming
// both sizes). The producer fields are kept, so a retry of a batch already
// written, rewritten again, is still found a duplicate by its sequence.
func (b *Broker) recompress(topic string, pol *MessagePolicy, batch segment.Batch) (segment.Batch, segment.Header, wire.ErrorCode, string) {
	out, err := batch.Recompress(pol.Codec)
	if err != nil {
		code := wire.Unknown
		if segment.IsCorruption(err) {
			code = wire.CorruptMessage
		}
		return nil, segment.Header{}, code, fmt.Sprintf("storing the batch in topic %s's compression.type (%s): %v", topic, compressionName(pol.Codec), err)
	}
	if code, msg := b.checkBatchSize(topic, pol, len(out)); code != wire.None {
		return nil, segment.Header{}, code, fmt.Sprintf("stored %s for topic %s's compression.type=%s, not %s as sent (%d bytes): %s",
			compressionName(out.Compression()), topic, compressionName(pol.Codec), compressionName(batch.Compression()), len(batch), msg)
	}
	h, err := segment.ParseHeader(out)
	if err != nil {
		// Recompress returns a whole batch: this is our bug, not the producer's.
		panic("broker: a recompressed batch without a header: " + err.Error())
	}
	return out, h, wire.None, ""
}

// compressionName names a codec as compression.type does (uncompressed,
// not none).
func compressionName(c segment.Codec) string {
	if c == segment.CodecNone {
		return "uncompressed"
	}
	return c.String()
}
