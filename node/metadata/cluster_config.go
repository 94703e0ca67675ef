package metadata

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"paymentlog/wire"
)

// Cluster configs are dynamic settings of every node (Kafka's dynamic
// broker configs at the cluster-wide default level): set through the
// controller, held in the image, applied by each node when it applies the
// record, without a restart. A key not set leaves each node's own flag in
// force.

// ConfigReassignmentThrottle is the rate, in bytes per second, at which
// each node copies partitions it is being added to by a reassignment (0:
// unlimited); when set it overrides the nodes' --reassignment-throttle.
const ConfigReassignmentThrottle = "reassignment.throttle.bytes"

// ConfigLogCleanerIOMax is the rate, in bytes per second, at which each
// node's log cleaner may read and write (0: unlimited); when set it
// overrides the nodes' --log-cleaner-io-max-bytes-per-second (Kafka's
// dynamic log.cleaner.io.max.bytes.per.second).
const ConfigLogCleanerIOMax = "log.cleaner.io.max.bytes.per.second"

// ConfigLogCleanerThreads is how many partitions each node's log cleaner
// compacts at once, from its next pass; when set it overrides the nodes'
// --log-cleaner-threads (Kafka's dynamic log.cleaner.threads). Any integer
// from 1 is taken: a node clamps it to what its dedupe buffer allows (a
// share of at least 1 MiB a thread) and logs that it did, since the nodes'
// buffers may differ and the controller does not know them.
const ConfigLogCleanerThreads = "log.cleaner.threads"

// ConfigLogScrubQuarantineRetention is how long, in milliseconds, each node
// keeps what a scrub repair set aside before removing it once redundant
// (0: never automatically); when set it overrides the nodes'
// --log-scrub-quarantine-retention.
const ConfigLogScrubQuarantineRetention = "log.scrub.quarantine.retention.ms"

// ConfigLogMessageTimestampType, ConfigLogMessageTimestampBeforeMaxMs,
// ConfigLogMessageTimestampAfterMaxMs, ConfigMessageMaxBytes and
// ConfigClusterCompressionType are the cluster's defaults for the topic
// configs message.timestamp.type, message.timestamp.before.max.ms,
// message.timestamp.after.max.ms, max.message.bytes and compression.type
// (Kafka's broker configs of these names): a topic that does not set a key
// takes the cluster's (TopicState.Messages).
const (
	ConfigLogMessageTimestampType        = "log.message.timestamp.type"
	ConfigLogMessageTimestampBeforeMaxMs = "log.message.timestamp.before.max.ms"
	ConfigLogMessageTimestampAfterMaxMs  = "log.message.timestamp.after.max.ms"
	// ConfigMessageMaxBytes is the cluster's default of max.message.bytes
	// (Kafka's broker config message.max.bytes).
	ConfigMessageMaxBytes = "message.max.bytes"
	// ConfigClusterCompressionType is the cluster's default of the topic
	// config compression.type (Kafka's broker config of the same name).
	ConfigClusterCompressionType = "compression.type"
)

// clusterDefaultOf maps each topic config with a cluster-wide default to
// the cluster config holding it.
var clusterDefaultOf = map[string]string{
	ConfigMessageTimestampType:        ConfigLogMessageTimestampType,
	ConfigMessageTimestampBeforeMaxMs: ConfigLogMessageTimestampBeforeMaxMs,
	ConfigMessageTimestampAfterMaxMs:  ConfigLogMessageTimestampAfterMaxMs,
	ConfigMaxMessageBytes:             ConfigMessageMaxBytes,
	ConfigCompressionType:             ConfigClusterCompressionType,
}

// ClusterConfigChanged (record type 12) changes the cluster configs: Set
// keys are set, Delete keys removed. It applies when no key is both set and
// deleted and the resulting configs pass ValidateClusterConfigs (which
// accepts unknown keys: a request refuses them, a record does not).
type ClusterConfigChanged struct {
	Set    map[string]string `msgpack:"set"`
	Delete []string          `msgpack:"del"`
}

// TypeClusterConfigChanged is ClusterConfigChanged's record type. Part of
// the format: never renumber.
const TypeClusterConfigChanged RecordType = 12

func (ClusterConfigChanged) Type() RecordType { return TypeClusterConfigChanged }
func (ClusterConfigChanged) Version() uint8   { return 1 }

func init() { typeNames[TypeClusterConfigChanged] = "ClusterConfigChanged" }

// ValidateClusterConfigs checks cluster configs as records and snapshots
// may hold them: the rules of topic configs for keys and value lengths, and
// the values of known keys.
func ValidateClusterConfigs(cfg map[string]string) error {
	if len(cfg) > MaxConfigs {
		return fmt.Errorf("more than %d configs", MaxConfigs)
	}
	for _, k := range slices.Sorted(maps.Keys(cfg)) {
		v := cfg[k]
		if !configKeyRE.MatchString(k) {
			return fmt.Errorf("config key %.128q: only lower-case letters, digits, '.' and '-' are allowed", k)
		}
		if len(v) > MaxConfigValueLen {
			return fmt.Errorf("config %s: value longer than %d bytes", k, MaxConfigValueLen)
		}
		if k == ConfigReassignmentThrottle || k == ConfigLogCleanerIOMax {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				return fmt.Errorf("config %s: want bytes per second, an integer >= 0 (0: unlimited), got %q", k, v)
			}
		}
		if k == ConfigLogCleanerThreads {
			if n, err := strconv.ParseInt(v, 10, 32); err != nil || n < 1 {
				return fmt.Errorf("config %s: want a thread count, an integer >= 1, got %q", k, v)
			}
		}
		if k == ConfigLogScrubQuarantineRetention {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 || n > math.MaxInt64/int64(time.Millisecond) {
				return fmt.Errorf("config %s: want milliseconds, an integer >= 0 (0: never remove automatically), got %q", k, v)
			}
		}
		if k == ConfigOffsetsRetention {
			if err := validateOffsetsRetention(v); err != nil {
				return err
			}
		}
		for topicKey, clusterKey := range clusterDefaultOf {
			if k == clusterKey {
				// The topic key's rule, the message naming this key.
				if err := checkCompactionConfig(topicKey, v); err != nil {
					return errors.New(strings.Replace(err.Error(), topicKey, clusterKey, 1))
				}
			}
		}
	}
	return nil
}

// knownClusterConfigs are the keys a request may set.
var knownClusterConfigs = []string{ConfigReassignmentThrottle, ConfigLogCleanerIOMax, ConfigLogCleanerThreads, ConfigLogScrubQuarantineRetention, ConfigOffsetsRetention,
	ConfigLogMessageTimestampType, ConfigLogMessageTimestampBeforeMaxMs, ConfigLogMessageTimestampAfterMaxMs, ConfigMessageMaxBytes,
	ConfigClusterCompressionType}

// applyClusterConfigChanged applies r; it returns a non-empty reason when
// rejected.
func (b *builder) applyClusterConfigChanged(r ClusterConfigChanged) string {
	if len(r.Set) > MaxConfigs || len(r.Delete) > MaxConfigs {
		return fmt.Sprintf("more than %d configs changed", MaxConfigs)
	}
	cfg := maps.Clone(b.next.clusterConfigs)
	if cfg == nil {
		cfg = map[string]string{}
	}
	for _, k := range r.Delete {
		if _, both := r.Set[k]; both {
			return fmt.Sprintf("config %s both set and deleted", k)
		}
		delete(cfg, k)
	}
	maps.Copy(cfg, r.Set)
	if err := ValidateClusterConfigs(cfg); err != nil {
		return err.Error()
	}
	if len(cfg) == 0 {
		cfg = nil
	}
	b.next.clusterConfigs = cfg
	b.clusterConfigs = true
	return ""
}

// formatClusterConfigChanged renders r on one line.
func formatClusterConfigChanged(r ClusterConfigChanged) string {
	s := "ClusterConfigChanged"
	for _, k := range slices.Sorted(maps.Keys(r.Set)) {
		s += fmt.Sprintf(" %s=%s", k, r.Set[k])
	}
	for _, k := range r.Delete {
		s += " -" + k
	}
	return s
}

// ClusterConfigs returns the cluster configs as set (a copy; nil when none).
func (m *Image) ClusterConfigs() map[string]string { return maps.Clone(m.clusterConfigs) }

// ReassignmentThrottle returns ConfigReassignmentThrottle, and whether it
// is set.
func (m *Image) ReassignmentThrottle() (int64, bool) {
	return configInt(m.clusterConfigs, ConfigReassignmentThrottle)
}

// LogCleanerIOMax returns ConfigLogCleanerIOMax, and whether it is set.
func (m *Image) LogCleanerIOMax() (int64, bool) {
	return configInt(m.clusterConfigs, ConfigLogCleanerIOMax)
}

// LogCleanerThreads returns ConfigLogCleanerThreads, and whether it is set.
func (m *Image) LogCleanerThreads() (int, bool) {
	n, ok := configInt(m.clusterConfigs, ConfigLogCleanerThreads)
	return int(n), ok
}

// LogScrubQuarantineRetention returns ConfigLogScrubQuarantineRetention,
// and whether it is set.
func (m *Image) LogScrubQuarantineRetention() (time.Duration, bool) {
	ms, ok := configInt(m.clusterConfigs, ConfigLogScrubQuarantineRetention)
	return time.Duration(ms) * time.Millisecond, ok
}

// AlterClusterConfigsEvent is a request to change the cluster configs.
type AlterClusterConfigsEvent struct {
	Set    map[string]string
	Delete []string
}

// DecideAlterClusterConfigs validates a cluster config change and returns
// the ClusterConfigChanged that carries it out. Refused with InvalidConfig:
// no change asked, a key this version does not know, a bad value, a key
// both set and deleted. Setting a key to its current value or deleting one
// not set is no change: a change that changes nothing returns no records
// (a retry of a committed change succeeds).
func DecideAlterClusterConfigs(img *Image, ev AlterClusterConfigsEvent) ([]Record, error) {
	if len(ev.Set) == 0 && len(ev.Delete) == 0 {
		return nil, werr(wire.InvalidRequest, "no cluster config to set or delete")
	}
	if len(ev.Set) > MaxConfigs || len(ev.Delete) > MaxConfigs {
		return nil, werr(wire.InvalidConfig, "more than %d configs in one change", MaxConfigs)
	}
	for _, k := range append(slices.Sorted(maps.Keys(ev.Set)), ev.Delete...) {
		if !slices.Contains(knownClusterConfigs, k) {
			return nil, werr(wire.InvalidConfig, "unknown cluster config %.128q (known: %v)", k, knownClusterConfigs)
		}
		if _, both := ev.Set[k]; both && slices.Contains(ev.Delete, k) {
			return nil, werr(wire.InvalidConfig, "cluster config %s is both set and deleted", k)
		}
	}
	if err := ValidateClusterConfigs(ev.Set); err != nil {
		return nil, werr(wire.InvalidConfig, "%v", err)
	}
	if err := requireVersion(img, 2, "changing cluster configs"); err != nil {
		return nil, err
	}
	var rec ClusterConfigChanged
	for k, v := range ev.Set {
		if cur, ok := img.clusterConfigs[k]; !ok || cur != v {
			if rec.Set == nil {
				rec.Set = map[string]string{}
			}
			rec.Set[k] = v
		}
	}
	for _, k := range ev.Delete {
		if _, ok := img.clusterConfigs[k]; ok && !slices.Contains(rec.Delete, k) {
			rec.Delete = append(rec.Delete, k)
		}
	}
	if rec.Set == nil && rec.Delete == nil {
		return nil, nil
	}
	return []Record{rec}, nil
}
