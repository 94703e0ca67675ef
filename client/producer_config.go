package client

import (
	"fmt"
	"strings"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Acks says when a leader answers a Produce request. The zero value is AcksAll.
type Acks int8

const (
	AcksAll    Acks = iota // once every ISR member has the batch (the HW passed it); the default
	AcksLeader             // once the leader has appended it and met its fsync policy
	AcksNone               // once the leader has appended it, before any flush: offsets reported, no idempotence, records may be lost
)

// ParseAcks parses "all" (or "-1"), "1" and "0".
func ParseAcks(s string) (Acks, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "-1", "":
		return AcksAll, nil
	case "1", "leader":
		return AcksLeader, nil
	case "0", "none":
		return AcksNone, nil
	}
	return 0, fmt.Errorf("acks must be all, 1 or 0, not %q", s)
}

func (a Acks) String() string {
	switch a {
	case AcksLeader:
		return "1"
	case AcksNone:
		return "0"
	default:
		return "all"
	}
}

func (a Acks) wire() int8 {
	switch a {
	case AcksLeader:
		return wire.AcksLeader
	case AcksNone:
		return wire.AcksNone
	default:
		return wire.AcksAll
	}
}

// Producer defaults.
const (
	DefaultBatchBytes          = 64 << 10
	DefaultLinger              = 5 * time.Millisecond
	DefaultMaxInFlight         = 5
	DefaultBufferBytes         = 64 << 20
	DefaultMaxRecordBytes      = 1 << 20
	DefaultProduceTimeout      = 30 * time.Second
	DefaultDeliveryTimeout     = 2 * time.Minute
	DefaultRetryBackoff        = 20 * time.Millisecond
	DefaultRetryBackoffMax     = time.Second
	DefaultLeaderCheckInterval = 50 * time.Millisecond
	DefaultMetadataWait        = 5 * time.Second
	// MaxInFlightIdempotent is the most requests per partition the leader's
	// duplicate detection covers (it remembers the last 5 batches).
	MaxInFlightIdempotent = 5
)

// ProducerConfig configures a Producer. Zero fields take the defaults named
// in their comments.
type ProducerConfig struct {
	Acks Acks // AcksAll
	// DisableIdempotence turns producer ids and sequence numbers off; retries
	// may then write a batch twice, and with MaxInFlight above 1 a retried
	// batch may land after one sent later, as in Kafka. Batches not retried
	// keep their order with any MaxInFlight: each request travels on a QUIC
	// stream of its own, the producer opens a partition's streams in the
	// order it sends the requests, and the leader appends the batches of one
	// connection's streams in that order (waiting up to 250 ms for a request
	// whose bytes are late, then appending without it). Set MaxInFlight to 1
	// to keep order across retries too. Idempotence is always off with
	// AcksNone.
	DisableIdempotence bool
	BatchBytes         int           // a batch closes at this size; 64 KiB
	Linger             time.Duration // a batch closes this long after its first record; 5ms; < 0: at once
	MaxInFlight        int           // outstanding requests per partition; 5 (at most 5 when idempotent)
	BufferBytes        int64         // records buffered but not yet acknowledged; 64 MiB; Produce blocks beyond
	// MaxRecordBytes is the largest record Produce takes, counting its key,
	// value and headers' keys and values (RecordBytes), not the framing the
	// batch adds; 1 MiB, at most 15 MiB. Larger ones get RecordTooLargeError.
	MaxRecordBytes int
	// RequestTimeout is the leader's time limit for one Produce request
	// (acks=all waits for the ISR) and, with a little grace, the client's; 30s.
	RequestTimeout time.Duration
	// DeliveryTimeout bounds the time from Produce to the delivery result,
	// retries included; 2m.
	DeliveryTimeout time.Duration
	RetryBackoff    time.Duration // first retry delay, doubled per attempt (with jitter); 20ms
	RetryBackoffMax time.Duration // 1s
	// LeaderCheckInterval: while a request has been outstanding this long, the
	// metadata is refreshed and requests to a replaced leader are abandoned
	// and retried at the new one; 50ms (a broker is fenced 250 ms after it dies; refreshes, at most one per 25 ms, find its successor quickly).
	// Such a refresh gives each node half the interval to answer before it
	// asks the next too (not HedgeDelay): the node asked first may be the
	// leader that just died.
	LeaderCheckInterval time.Duration
	// MetadataWait is how long Produce waits for an unknown topic to appear
	// before failing with UnknownTopicOrPartition; 5s.
	MetadataWait time.Duration
	// Partitioner replaces the default (murmur2 of the key, else sticky) when set.
	Partitioner PartitionFunc
	// Compression compresses each batch's records (segment.CodecLZ4,
	// segment.CodecZstd; none by default). The leader stores and replicates
	// the compressed bytes and consumers decompress them, so network, disk
	// and fsyncs shrink by the records' compression ratio at some producer
	// and consumer CPU. BatchBytes and MaxRecordBytes count uncompressed
	// bytes; a batch that does not shrink is sent uncompressed.
	Compression segment.Codec
}

func (c ProducerConfig) withDefaults() ProducerConfig {
	if c.BatchBytes <= 0 {
		c.BatchBytes = DefaultBatchBytes
	}
	if c.Linger == 0 {
		c.Linger = DefaultLinger
	} else if c.Linger < 0 {
		c.Linger = 0
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.BufferBytes <= 0 {
		c.BufferBytes = DefaultBufferBytes
	}
	if c.MaxRecordBytes <= 0 {
		c.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultProduceTimeout
	}
	if c.DeliveryTimeout <= 0 {
		c.DeliveryTimeout = DefaultDeliveryTimeout
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.RetryBackoffMax <= 0 {
		c.RetryBackoffMax = DefaultRetryBackoffMax
	}
	if c.RetryBackoffMax < c.RetryBackoff {
		c.RetryBackoffMax = c.RetryBackoff
	}
	if c.LeaderCheckInterval <= 0 {
		c.LeaderCheckInterval = DefaultLeaderCheckInterval
	}
	if c.MetadataWait <= 0 {
		c.MetadataWait = DefaultMetadataWait
	}
	return c
}

// idempotent reports whether batches carry a producer id and sequences.
func (c ProducerConfig) idempotent() bool { return !c.DisableIdempotence && c.Acks != AcksNone }

// Validate reports the first invalid field (after defaults are applied).
func (c ProducerConfig) Validate() error {
	c = c.withDefaults()
	if c.Acks < AcksAll || c.Acks > AcksNone {
		return &ConfigError{Field: "Acks", Reason: fmt.Sprintf("unknown value %d", c.Acks)}
	}
	if c.idempotent() && c.MaxInFlight > MaxInFlightIdempotent {
		return &ConfigError{Field: "MaxInFlight", Reason: fmt.Sprintf("at most %d with idempotence", MaxInFlightIdempotent)}
	}
	if !c.Compression.Supported() {
		return &ConfigError{Field: "Compression", Reason: fmt.Sprintf("%v: want none, lz4 or zstd", c.Compression)}
	}
	if c.MaxRecordBytes > 15<<20 {
		return &ConfigError{Field: "MaxRecordBytes", Reason: "at most 15 MiB (the frame limit is 16 MiB)"}
	}
	if c.BatchBytes > 15<<20 {
		return &ConfigError{Field: "BatchBytes", Reason: "at most 15 MiB (the frame limit is 16 MiB)"}
	}
	return nil
}
