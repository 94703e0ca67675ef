package metadata

import (
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strconv"
)

// Topic config keys understood by paymentlog. A new request (CreateTopic,
// AlterConfigs) naming any other key is refused (ValidateNewConfigs); a
// record or snapshot holding one (written before unknown keys were refused)
// still applies, and the key is kept, shown and has no effect.
const (
	ConfigUncleanLeaderElection = "unclean.leader.election.enable" // "true" | "false" (default)
	ConfigRetentionMs           = "retention.ms"                   // integer, -1 = forever
	ConfigRetentionBytes        = "retention.bytes"                // integer, -1 = unlimited
	ConfigSegmentBytes          = "segment.bytes"                  // integer in [1 MiB, MaxSegmentBytes]
	// ConfigSegmentMs seals a partition's active segment once it has been
	// open this long, at the next append (Kafka's segment.ms): records
	// leave by retention, and by compaction, a segment at a time, so a
	// topic written slowly holds records up to about this long past
	// retention.ms. Unset: the node's roll age, 7 days.
	ConfigSegmentMs = "segment.ms" // integer >= 1
	// ConfigCleanupPolicy says what removes a topic's old records (Kafka's
	// cleanup.policy): "delete" (the default: retention.ms and
	// retention.bytes delete whole old segments), "compact" (the log
	// cleaner keeps the last record of each key, retention deletes
	// nothing) or both, "compact,delete" or "delete,compact". A compacted
	// topic refuses records without a key.
	ConfigCleanupPolicy = "cleanup.policy"
	// The compaction configs, read only when cleanup.policy includes compact.
	ConfigMinCleanableDirtyRatio = "min.cleanable.dirty.ratio" // float in [0, 1]; default DefaultMinCleanableDirtyRatio
	ConfigDeleteRetentionMs      = "delete.retention.ms"       // integer >= 0; default DefaultDeleteRetentionMs
	ConfigMinCompactionLagMs     = "min.compaction.lag.ms"     // integer >= 0; default 0
	// ConfigMaxCompactionLagMs bounds how long a record waits for the
	// cleaner: a partition with dirty records older than this is cleaned
	// whatever its dirty ratio, and its active segment is sealed after this
	// long (at the next append). Kafka's; unset: no bound.
	ConfigMaxCompactionLagMs = "max.compaction.lag.ms" // integer >= 1; default unset
	// ConfigMessageTimestampType says whose clock a record's timestamp is
	// (Kafka's message.timestamp.type): "CreateTime" (the default: the
	// producer's) or "LogAppendTime" (the leader's, when it appends the
	// batch: every record of the batch gets it, so that retention.ms and
	// lookups by time follow the cluster's clock, not a producer's).
	ConfigMessageTimestampType = "message.timestamp.type"
	// ConfigMessageTimestampBeforeMaxMs and ConfigMessageTimestampAfterMaxMs
	// bound how far a CreateTime record's timestamp may lie before or after
	// the leader's clock when it is produced (Kafka's, KIP-937): a batch
	// holding one outside is refused whole with InvalidTimestamp. Unset: no
	// bound. They do not apply to LogAppendTime topics.
	ConfigMessageTimestampBeforeMaxMs = "message.timestamp.before.max.ms" // integer >= 0
	ConfigMessageTimestampAfterMaxMs  = "message.timestamp.after.max.ms"  // integer >= 0
	// ConfigMaxMessageBytes is the largest record batch the topic takes
	// (Kafka's max.message.bytes), header included; a larger one is refused
	// with RecordTooLarge naming the topic and the limit, and producers
	// build no larger batch (they learn it from the metadata). The node's
	// own limit (16 MiB less 1 KiB: segment.DefaultMaxBatchBytes) applies
	// too. Unset: the node's limit.
	ConfigMaxMessageBytes = "max.message.bytes" // integer in [MinMaxMessageBytes, MaxSegmentBytes]
	// ConfigCompressionType is the codec the topic's batches are stored in
	// (Kafka's compression.type): "producer" (the default: as each
	// producer sent them), "uncompressed" (the leader decompresses a
	// compressed batch), "lz4" or "zstd" (the leader recompresses a batch
	// sent in another codec or uncompressed; one the codec would not
	// shrink is stored uncompressed, as producers send it). Kafka's
	// "gzip" and "snappy" are refused by name (this build reads neither),
	// and so is "none", the producers' name, which Kafka refuses as a
	// topic's too. Changing it applies to the batches produced after;
	// those stored stay as they are.
	ConfigCompressionType = "compression.type"
	// ConfigMinInsyncReplicas is accepted in requests only: it is stored as
	// the topic's MinISR field (TopicCreated.MinISR, TopicConfigChanged.MinISR),
	// never in Configs.
	ConfigMinInsyncReplicas = "min.insync.replicas" // integer in [1, RF]
)

// KnownConfig reports whether key is a topic config paymentlog understands.
func KnownConfig(key string) bool {
	switch key {
	case ConfigUncleanLeaderElection, ConfigRetentionMs, ConfigRetentionBytes, ConfigSegmentBytes, ConfigSegmentMs,
		ConfigMinInsyncReplicas, ConfigCleanupPolicy, ConfigMinCleanableDirtyRatio, ConfigDeleteRetentionMs,
		ConfigMinCompactionLagMs, ConfigMaxCompactionLagMs, ConfigMessageTimestampType,
		ConfigMessageTimestampBeforeMaxMs, ConfigMessageTimestampAfterMaxMs, ConfigMaxMessageBytes, ConfigCompressionType:
		return true
	}
	return false
}

// Compaction defaults (Kafka's).
const (
	// DefaultMinCleanableDirtyRatio: a partition is cleaned once half of
	// its cleanable bytes were written since the last pass.
	DefaultMinCleanableDirtyRatio = 0.5
	// DefaultDeleteRetentionMs: a tombstone stays a day after the cleaner
	// first passed it, so that a consumer reading from the log start has
	// that long to see the delete.
	DefaultDeleteRetentionMs int64 = 24 * 3600 * 1000
)

// The values of message.timestamp.type.
const (
	TimestampCreateTime    = "CreateTime"
	TimestampLogAppendTime = "LogAppendTime"
)

// The values of compression.type.
const (
	CompressionProducer     = "producer"
	CompressionUncompressed = "uncompressed"
	CompressionLZ4          = "lz4"
	CompressionZstd         = "zstd"
)

// checkCompressionType checks a compression.type value, naming Kafka's
// values this build does not take.
func checkCompressionType(k, v string) error {
	switch v {
	case CompressionProducer, CompressionUncompressed, CompressionLZ4, CompressionZstd:
		return nil
	case "gzip", "snappy":
		return fmt.Errorf("config %s: want producer, uncompressed, lz4 or zstd, got %q: this build neither reads nor writes %s", k, v, v)
	case "none":
		return fmt.Errorf("config %s: want producer, uncompressed, lz4 or zstd, got %q: a topic's name for no compression is uncompressed", k, v)
	}
	return fmt.Errorf("config %s: want producer, uncompressed, lz4 or zstd, got %.64q", k, v)
}

// MinMaxMessageBytes is the smallest max.message.bytes: a batch header
// (segment.HeaderSize, 61 bytes) and a small record.
const MinMaxMessageBytes = 128

// Cleanup policies, the values ParseCleanupPolicy accepts.
const (
	CleanupDelete  = "delete"
	CleanupCompact = "compact"
)

// ParseCleanupPolicy parses a cleanup.policy value: "delete", "compact",
// "compact,delete" or "delete,compact" (exactly: no spaces, no repeats).
// ok is false for anything else.
func ParseCleanupPolicy(v string) (compact, del, ok bool) {
	switch v {
	case CleanupDelete:
		return false, true, true
	case CleanupCompact:
		return true, false, true
	case CleanupCompact + "," + CleanupDelete, CleanupDelete + "," + CleanupCompact:
		return true, true, true
	}
	return false, false, false
}

// UnknownConfigError is a request naming a config key paymentlog does not
// understand (Kafka's "Unknown topic config name").
type UnknownConfigError struct{ Key string }

func (e *UnknownConfigError) Error() string { return "Unknown topic config name: " + e.Key }

// ValidateNewConfigs checks the configs of a new request: ValidateConfigs,
// every key must be known (KnownConfig) and the compaction configs' values
// valid. Keys are checked in sorted order, so the error names the same key
// every time.
func ValidateNewConfigs(cfg map[string]string) error {
	if len(cfg) > MaxConfigs {
		return fmt.Errorf("more than %d configs", MaxConfigs)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		if err := checkNewConfigKey(k); err != nil {
			return err
		}
		if err := checkCompactionConfig(k, cfg[k]); err != nil {
			return err
		}
	}
	if err := ValidateConfigs(cfg); err != nil {
		return err
	}
	if v, ok := cfg[ConfigMinInsyncReplicas]; ok {
		if _, err := parseMinISR(v); err != nil {
			return err
		}
	}
	return nil
}

// checkCompactionConfig checks the value of a compaction config, of
// segment.ms or of a message config (any other key passes). Only requests are checked: these keys
// were unknown, so accepted with any value, before they were built, and a record or
// snapshot of that time must still apply as it did (a value that does not
// parse acts as the key's default: TopicState.Compaction).
func checkCompactionConfig(k, v string) error {
	switch k {
	case ConfigCleanupPolicy:
		if _, _, ok := ParseCleanupPolicy(v); !ok {
			return fmt.Errorf("config %s: want delete, compact or compact,delete, got %q", k, v)
		}
	case ConfigMinCleanableDirtyRatio:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= 1) { // NaN fails both
			return fmt.Errorf("config %s: want a number from 0 to 1, got %q", k, v)
		}
	case ConfigMessageTimestampType:
		if v != TimestampCreateTime && v != TimestampLogAppendTime {
			return fmt.Errorf("config %s: want %s or %s, got %q", k, TimestampCreateTime, TimestampLogAppendTime, v)
		}
	case ConfigCompressionType:
		return checkCompressionType(k, v)
	case ConfigMaxMessageBytes:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < MinMaxMessageBytes || n > MaxSegmentBytes {
			return fmt.Errorf("config %s: want an integer from %d to %d, got %q", k, MinMaxMessageBytes, MaxSegmentBytes, v)
		}
	case ConfigDeleteRetentionMs, ConfigMinCompactionLagMs, ConfigMessageTimestampBeforeMaxMs, ConfigMessageTimestampAfterMaxMs:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("config %s: want an integer >= 0, got %q", k, v)
		}
	case ConfigMaxCompactionLagMs, ConfigSegmentMs:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return fmt.Errorf("config %s: want an integer >= 1, got %q", k, v)
		}
	}
	return nil
}

// checkNewConfigKey refuses a key a request may not name: malformed (quoted
// and cut short in the message: it comes from the network) or unknown.
func checkNewConfigKey(k string) error {
	if !configKeyRE.MatchString(k) {
		return fmt.Errorf("config key %.128q: only lower-case letters, digits, '.' and '-' are allowed", k)
	}
	if !KnownConfig(k) {
		return &UnknownConfigError{Key: k}
	}
	return nil
}

// parseMinISR parses a min.insync.replicas value (its upper bound, the
// replication factor, is the caller's to check).
func parseMinISR(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 1 || n > MaxReplicas {
		return 0, fmt.Errorf("config %s: want an integer from 1 to the replication factor, got %q", ConfigMinInsyncReplicas, v)
	}
	return int32(n), nil
}

// Limits on what a topic may ask for.
const (
	MaxTopicNameLen   = 249
	MaxPartitions     = 10000
	MaxReplicas       = 16
	MaxConfigs        = 64
	MaxConfigValueLen = 1024
	// MaxSegmentBytes is segment.MaxSegmentBytes (positions in a segment's
	// index are uint32 and must fit an int32).
	MaxSegmentBytes = math.MaxInt32
)

var (
	topicNameRE = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)
	configKeyRE = regexp.MustCompile(`^[a-z0-9.-]{1,128}$`)
)

// ValidateTopicName checks a topic name: 1–249 characters of [a-zA-Z0-9._-],
// not "." or "..", not starting with "__" (reserved for internal logs such as
// __cluster_metadata).
func ValidateTopicName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("topic name is empty")
	case len(name) > MaxTopicNameLen:
		return fmt.Errorf("topic name is longer than %d characters", MaxTopicNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is not allowed", name)
	case len(name) >= 2 && name[:2] == "__":
		return fmt.Errorf("topic name %q: names starting with __ are reserved", name)
	case !topicNameRE.MatchString(name):
		return fmt.Errorf("topic name %q: only letters, digits, '.', '_' and '-' are allowed", name)
	}
	return nil
}

// ValidateConfigs checks topic configs as records and snapshots may hold
// them: key syntax, value length, and the values of known keys but the
// compaction ones (checkCompactionConfig says why). It accepts unknown
// keys; requests use ValidateNewConfigs.
func ValidateConfigs(cfg map[string]string) error {
	if len(cfg) > MaxConfigs {
		return fmt.Errorf("more than %d configs", MaxConfigs)
	}
	for k, v := range cfg {
		if !configKeyRE.MatchString(k) {
			return fmt.Errorf("config key %.128q: only lower-case letters, digits, '.' and '-' are allowed", k)
		}
		if len(v) > MaxConfigValueLen {
			return fmt.Errorf("config %s: value longer than %d bytes", k, MaxConfigValueLen)
		}
		switch k {
		case ConfigUncleanLeaderElection:
			if v != "true" && v != "false" {
				return fmt.Errorf("config %s: want true or false, got %q", k, v)
			}
		case ConfigRetentionMs, ConfigRetentionBytes:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < -1 {
				return fmt.Errorf("config %s: want an integer >= -1, got %q", k, v)
			}
		case ConfigSegmentBytes:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 1<<20 || n > MaxSegmentBytes {
				return fmt.Errorf("config %s: want an integer from 1048576 to %d, got %q", k, MaxSegmentBytes, v)
			}
		}
	}
	return nil
}
