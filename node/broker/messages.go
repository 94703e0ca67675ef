package broker

import (
	"fmt"
	"math"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// MessagePolicy is what a topic's configs ask of each produced batch:
// message.timestamp.type, message.timestamp.before.max.ms and
// .after.max.ms, max.message.bytes and compression.type
// (node/metadata/configs.go). The zero value asks nothing beyond the node's
// own limits.
type MessagePolicy struct {
	// LogAppendTime: the leader stamps every batch with its clock
	// (segment.Batch.StampLogAppendTime), and its records carry that time.
	LogAppendTime bool
	// Before and After bound how far a record's timestamp may lie before
	// and after the leader's clock (CreateTime topics only).
	Before, After TimestampBound
	// MaxBytes is the largest batch the topic takes; 0: the node's limit.
	// MaxBytesFromCluster says it is the cluster's message.max.bytes, not
	// the topic's max.message.bytes (for the refusal's message).
	MaxBytes            int
	MaxBytesFromCluster bool
	// Recompress: the leader stores every batch in Codec (compression.type
	// uncompressed, lz4 or zstd), rewriting one sent in another
	// (recompress.go); false (compression.type=producer, the default):
	// batches are stored as sent, and Codec is not read.
	Recompress bool
	Codec      segment.Codec
}

// TimestampBound is a message.timestamp.*.max.ms. The zero value is no
// bound.
type TimestampBound struct {
	Set bool
	Max time.Duration
}

// checkRecords checks every record of a produced batch in one decoding
// (decompressed, if it is: segment.Batch.ValidateRecords):
//   - each must decode, so that a batch no consumer could read is refused
//     rather than acknowledged (CorruptMessage);
//   - on a compacted topic each must have a key, which the cleaner keeps
//     the last record of (InvalidRecord, as in Kafka; an empty key is a
//     key);
//   - under pol's timestamp bounds (not with LogAppendTime) each
//     timestamp must lie within them of now (InvalidTimestamp, as in
//     Kafka: the whole batch is refused).
func checkRecords(batch segment.Batch, topic string, compacted bool, pol *MessagePolicy, now time.Time) (wire.ErrorCode, string) {
	bounded := pol != nil && !pol.LogAppendTime && (pol.Before.Set || pol.After.Set)
	if !compacted && !bounded {
		if err := batch.ValidateRecords(); err != nil {
			return wire.CorruptMessage, err.Error()
		}
		return wire.None, ""
	}
	lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
	nowMs := now.UnixMilli()
	if bounded && pol.Before.Set {
		lo = nowMs - pol.Before.Max.Milliseconds()
	}
	if bounded && pol.After.Set {
		hi = nowMs + pol.After.Max.Milliseconds()
	}
	// ValidateRecords' loop, looking at each record on the way.
	var it segment.Records
	it.Reset(batch)
	keyless := false
	for i := 0; it.Next(); i++ {
		r := it.Record()
		keyless = keyless || r.Key == nil
		switch {
		case r.Timestamp < lo:
			return wire.InvalidTimestamp, fmt.Sprintf("record %d of the batch has timestamp %d, more than %d ms before the leader's clock (%d): topic %s sets message.timestamp.before.max.ms=%d",
				i, r.Timestamp, pol.Before.Max.Milliseconds(), nowMs, topic, pol.Before.Max.Milliseconds())
		case r.Timestamp > hi:
			return wire.InvalidTimestamp, fmt.Sprintf("record %d of the batch has timestamp %d, more than %d ms after the leader's clock (%d): topic %s sets message.timestamp.after.max.ms=%d",
				i, r.Timestamp, pol.After.Max.Milliseconds(), nowMs, topic, pol.After.Max.Milliseconds())
		}
	}
	if err := it.Err(); err != nil {
		return wire.CorruptMessage, err.Error()
	}
	if compacted && keyless {
		return wire.InvalidRecord, fmt.Sprintf("compacted topic %s cannot accept a record without a key", topic)
	}
	return wire.None, ""
}

// checkBatchSize refuses (RecordTooLarge, saying which limit) a batch of
// size bytes larger than a partition of topic takes: the node's limit, or
// the topic's max.message.bytes when lower. The message is built only for
// a refusal: this runs for every produced batch.
func (b *Broker) checkBatchSize(topic string, pol *MessagePolicy, size int) (wire.ErrorCode, string) {
	limit := b.cfg.Log.MaxBatchBytes
	if limit <= 0 {
		limit = defaultMaxBatchBytes
	}
	if pol != nil && pol.MaxBytes > 0 && pol.MaxBytes < limit {
		switch {
		case size <= pol.MaxBytes:
			return wire.None, ""
		case pol.MaxBytesFromCluster:
			return wire.RecordTooLarge, fmt.Sprintf("batch of %d bytes is larger than the cluster's message.max.bytes (%d), which topic %s takes", size, pol.MaxBytes, topic)
		}
		return wire.RecordTooLarge, fmt.Sprintf("batch of %d bytes is larger than topic %s's max.message.bytes (%d)", size, topic, pol.MaxBytes)
	}
	if size > limit {
		return wire.RecordTooLarge, fmt.Sprintf("batch of %d bytes is larger than the node's maximum batch size (%d)", size, limit)
	}
	return wire.None, ""
}

// appendTimeAt is the log append time of the batch holding offset (a
// retried batch's original), 0 when it has none or cannot be read (deleted
// since): a retry's answer gives the time the records were given.
func (p *partition) appendTimeAt(offset int64) int64 {
	v, err := p.log.Read(offset, 1, -1)
	if err != nil {
		return 0
	}
	defer v.Release()
	h, err := segment.ParseHeader(v.Data)
	if err != nil || !h.LogAppendTime() {
		return 0
	}
	return h.MaxTimestamp
}

// PartitionMessages is the message policy the produce path of a partition
// replicated here applies now (the topic's configs as this node last
// applied them); ok is false when the node holds no such partition.
func (b *Broker) PartitionMessages(topic string, partition int32) (pol MessagePolicy, ok bool) {
	p := b.partition(topic, partition)
	if p == nil {
		return MessagePolicy{}, false
	}
	if m := p.messages.Load(); m != nil {
		pol = *m
	}
	return pol, true
}
