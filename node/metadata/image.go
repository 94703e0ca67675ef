package metadata

import (
	"slices"
	"sort"
	"strconv"

	"paymentlog/node/acl"
)

// NoLeader is a partition's leader while it is offline.
const NoLeader int32 = -1

// BrokerState is one registered broker as the image knows it.
type BrokerState struct {
	ID                 int32
	Addr               string
	Incarnation        int64
	ControllerEligible bool
	Fenced             bool
	// ShuttingDown is set by a controlled shutdown and cleared by the next
	// registration; such a broker may not lead nor join an ISR.
	ShuttingDown bool
	// CatchUpOffset is the offset of the broker's latest BrokerRegistered or
	// BrokerFenced record: it is unfenced only after reporting (in a
	// heartbeat) a metadata offset at least this large.
	CatchUpOffset uint64
	// MetadataVersion is the highest metadata version the broker's build
	// applies, as registered (0: version 1; metadata_version.go).
	MetadataVersion int32
	// Rack is the broker's failure domain as registered ("": none).
	Rack string
}

// TopicState is one topic. Partitions[i].Partition == i.
type TopicState struct {
	Name       string
	ID         string
	RF         int32
	MinISR     int32
	Configs    map[string]string // read-only
	Partitions []PartitionState  // read-only
}

// UncleanLeaderElection reports whether the topic allows electing a leader
// from outside the ISR (config unclean.leader.election.enable=true).
func (t TopicState) UncleanLeaderElection() bool {
	return t.Configs[ConfigUncleanLeaderElection] == "true"
}

// Retention returns the topic's retention.ms and retention.bytes (-1:
// forever, unlimited); ok is false for a key the topic does not set, which
// takes the node's default.
func (t TopicState) Retention() (ms int64, msOK bool, bytes int64, bytesOK bool) {
	ms, msOK = configInt(t.Configs, ConfigRetentionMs)
	bytes, bytesOK = configInt(t.Configs, ConfigRetentionBytes)
	return ms, msOK, bytes, bytesOK
}

// SegmentBytes returns the topic's segment.bytes; ok is false when the
// topic does not set it (the node's --segment-bytes applies).
func (t TopicState) SegmentBytes() (n int64, ok bool) {
	return configInt(t.Configs, ConfigSegmentBytes)
}

// SegmentMs returns the topic's segment.ms; ok is false when the topic
// does not set it, or sets a value that does not parse (stored before the
// key was known), and the node's roll age applies.
func (t TopicState) SegmentMs() (ms int64, ok bool) {
	ms, ok = configInt(t.Configs, ConfigSegmentMs)
	return ms, ok && ms >= 1
}

// Messages is what a topic's configs ask of each produced batch.
type Messages struct {
	// LogAppendTime: message.timestamp.type is LogAppendTime.
	LogAppendTime bool
	// BeforeMaxMs and AfterMaxMs are message.timestamp.before.max.ms and
	// message.timestamp.after.max.ms; -1: unset, no bound.
	BeforeMaxMs, AfterMaxMs int64
	// MaxBytes is max.message.bytes; 0: unset, the node's limit.
	// MaxBytesFromCluster: it is the cluster's message.max.bytes.
	MaxBytes            int64
	MaxBytesFromCluster bool
	// Compression is compression.type when it asks the leader to rewrite
	// batches: CompressionUncompressed, CompressionLZ4 or
	// CompressionZstd; "": producer, the default (batches are stored as
	// sent).
	Compression string
}

// Messages returns the topic's message configs. A key the topic does not
// set takes the cluster's default (cluster: the image's ClusterConfigs, nil
// for none; see clusterDefaultOf), else its own; so does one set to a value
// that does not parse (stored before the key was known).
func (t TopicState) Messages(cluster map[string]string) Messages {
	// get returns the key's valid value and whether it is the cluster's.
	get := func(key string) (v string, fromCluster, ok bool) {
		if v, ok := t.Configs[key]; ok && checkCompactionConfig(key, v) == nil {
			return v, false, true
		}
		v, ok = cluster[clusterDefaultOf[key]]
		return v, true, ok && checkCompactionConfig(key, v) == nil
	}
	m := Messages{BeforeMaxMs: -1, AfterMaxMs: -1}
	if v, _, ok := get(ConfigMessageTimestampType); ok {
		m.LogAppendTime = v == TimestampLogAppendTime
	}
	if v, _, ok := get(ConfigMessageTimestampBeforeMaxMs); ok {
		m.BeforeMaxMs, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, _, ok := get(ConfigMessageTimestampAfterMaxMs); ok {
		m.AfterMaxMs, _ = strconv.ParseInt(v, 10, 64)
	}
	if v, _, ok := get(ConfigCompressionType); ok && v != CompressionProducer {
		m.Compression = v
	}
	if v, fromCluster, ok := get(ConfigMaxMessageBytes); ok {
		m.MaxBytes, _ = strconv.ParseInt(v, 10, 64)
		m.MaxBytesFromCluster = fromCluster
	}
	return m
}

// Compaction is a topic's cleanup.policy and compaction configs, with
// their defaults filled in.
type Compaction struct {
	// Compact and Delete say whether cleanup.policy includes compact (the
	// log cleaner compacts the topic's partitions, which refuse records
	// without a key) and delete (retention.ms and retention.bytes apply).
	Compact, Delete bool
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio
	// (DefaultMinCleanableDirtyRatio).
	MinCleanableDirtyRatio float64
	// DeleteRetentionMs is delete.retention.ms (DefaultDeleteRetentionMs),
	// MinCompactionLagMs min.compaction.lag.ms (0), MaxCompactionLagMs
	// max.compaction.lag.ms (0: unset, no bound).
	DeleteRetentionMs, MinCompactionLagMs, MaxCompactionLagMs int64
}

// Compaction returns the topic's cleanup.policy and compaction configs. A
// key the topic does not set takes its default, as does one holding a value
// that does not parse (stored before the key was known, when any value
// was accepted: checkCompactionConfig), which thus keeps the effect it had.
func (t TopicState) Compaction() Compaction {
	c := Compaction{Delete: true, MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio,
		DeleteRetentionMs: DefaultDeleteRetentionMs}
	if v, ok := t.Configs[ConfigCleanupPolicy]; ok {
		if compact, del, ok := ParseCleanupPolicy(v); ok {
			c.Compact, c.Delete = compact, del
		}
	}
	if v, ok := t.Configs[ConfigMinCleanableDirtyRatio]; ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
			c.MinCleanableDirtyRatio = f
		}
	}
	if n, ok := configInt(t.Configs, ConfigDeleteRetentionMs); ok && n >= 0 {
		c.DeleteRetentionMs = n
	}
	if n, ok := configInt(t.Configs, ConfigMinCompactionLagMs); ok && n >= 0 {
		c.MinCompactionLagMs = n
	}
	if n, ok := configInt(t.Configs, ConfigMaxCompactionLagMs); ok && n >= 1 {
		c.MaxCompactionLagMs = n
	}
	return c
}

// configInt parses an integer config (validated when the topic was created).
func configInt(cfg map[string]string, key string) (int64, bool) {
	v, ok := cfg[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// PartitionState is one partition's assignment and leadership. The slices are
// shared between image versions and must not be modified.
//
// Invariants: ISR ⊆ Replicas, Leader == NoLeader or Leader ∈ ISR (so an
// empty ISR, which only a lost last member leaves, has no leader),
// ELR ⊆ Replicas, ELR ∩ ISR = ∅, ELR in assignment order, Lost ⊆ Replicas
// and empty unless the ISR is.
type PartitionState struct {
	Topic          string
	TopicID        string
	Partition      int32
	Replicas       []int32 // assignment order; Replicas[0] is the preferred leader
	ISR            []int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	// ELR holds the eligible leader replicas (KIP-966): replicas that left
	// the ISR while it went below the topic's min ISR, when the HW stopped
	// (replica.NextHW), so they hold every record below it. A partition
	// whose ISR has no live member elects one of them (election.go).
	ELR []int32
	// Adding and Removing are set while the partition is being reassigned
	// (reassign.go): Replicas is then the target followed by the replicas
	// being removed; Adding are target replicas that were not replicas
	// before, Removing are replicas not in the target. Both nil otherwise.
	Adding   []int32
	Removing []int32
	// Lost is set while the ISR is empty: the replicas that lost their
	// storage (a wiped or replaced data directory, or the partition's
	// directory) as the partition's last in-sync replica, with no ELR to
	// take over, or while the partition was offline this way
	// (dropRestartedReplica). The partition waits for an unclean election,
	// which takes another live replica before any of these: theirs hold
	// nothing of the partition. Nil once the partition has an ISR again.
	Lost []int32
}

// Preferred is the preferred leader (first assigned replica).
func (p PartitionState) Preferred() int32 {
	if len(p.Replicas) == 0 {
		return NoLeader
	}
	return p.Replicas[0]
}

// InISR reports whether id is in the ISR.
func (p PartitionState) InISR(id int32) bool { return slices.Contains(p.ISR, id) }

// InELR reports whether id is an eligible leader replica.
func (p PartitionState) InELR(id int32) bool { return slices.Contains(p.ELR, id) }

// InLost reports whether id lost its storage as the last ISR member (Lost).
func (p PartitionState) InLost(id int32) bool { return slices.Contains(p.Lost, id) }

// HasReplica reports whether id is assigned a replica.
func (p PartitionState) HasReplica(id int32) bool { return slices.Contains(p.Replicas, id) }

// Equal compares two partition states field by field.
func (p PartitionState) Equal(q PartitionState) bool {
	return p.Topic == q.Topic && p.TopicID == q.TopicID && p.Partition == q.Partition &&
		slices.Equal(p.Replicas, q.Replicas) && slices.Equal(p.ISR, q.ISR) && p.Leader == q.Leader &&
		p.LeaderEpoch == q.LeaderEpoch && p.PartitionEpoch == q.PartitionEpoch && slices.Equal(p.ELR, q.ELR) &&
		slices.Equal(p.Adding, q.Adding) && slices.Equal(p.Removing, q.Removing) && slices.Equal(p.Lost, q.Lost)
}

// Image is the metadata as of one offset of the metadata log. An *Image is
// never modified once returned: Apply builds a new one, sharing what did not
// change. The zero Image is not used; call EmptyImage.
type Image struct {
	offset         uint64
	controllerID   int32
	controllerTerm uint64
	// prevControllerID is the controller whose marker the latest change of
	// controller (or term) replaced, -1 before any such change.
	prevControllerID int32
	nextProducerID   int64
	// metadataVersion is the version of the records the cluster uses: the
	// highest version of any record applied (metadata_version.go); 1 before
	// any record of a later version.
	metadataVersion int32
	// clusterConfigs are the cluster configs as set (cluster_config.go); nil
	// when none.
	clusterConfigs map[string]string
	brokers        map[int32]*BrokerState
	topics         map[string]*TopicState
	partitionCount int
	// groups are the consumer groups' committed offsets (groups.go); nil
	// when none.
	groups map[string]*GroupState
	// acls are the ACL bindings (acls.go); nil when none.
	acls *acl.Set
	// quotas are the client quotas (quotas.go), by principal ("": the
	// default), then key; nil when none, and no entity without a key. Shared
	// between image versions: never modified, copied on write.
	quotas map[string]map[string]int64
}

// EmptyImage is the image before any record.
func EmptyImage() *Image {
	return &Image{
		controllerID:     -1,
		prevControllerID: -1,
		metadataVersion:  1,
		brokers:          map[int32]*BrokerState{},
		topics:           map[string]*TopicState{},
	}
}

// Offset is the raft index of the last applied entry (0 before any).
func (m *Image) Offset() uint64 { return m.offset }

// ControllerID is the controller that wrote the latest ControllerMarker, -1
// before any. The live raft leader may be newer; prefer raft's view.
func (m *Image) ControllerID() int32 { return m.controllerID }

// ControllerTerm is the raft term of the latest ControllerMarker.
func (m *Image) ControllerTerm() uint64 { return m.controllerTerm }

// PrevControllerID is the controller that preceded ControllerID: the one
// named by the image just before the marker that made ControllerID (in its
// current term) the controller, -1 if none. A controller reads it from the
// image that includes its own marker; the image before that marker may lag
// the log and name an older controller.
func (m *Image) PrevControllerID() int32 { return m.prevControllerID }

// NextProducerID is the first producer id not yet allocated to any broker.
func (m *Image) NextProducerID() int64 { return m.nextProducerID }

// Broker returns one broker.
func (m *Image) Broker(id int32) (BrokerState, bool) {
	b, ok := m.brokers[id]
	if !ok {
		return BrokerState{}, false
	}
	return *b, true
}

// Brokers returns every registered broker, sorted by id.
func (m *Image) Brokers() []BrokerState {
	out := make([]BrokerState, 0, len(m.brokers))
	for _, b := range m.brokers {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// UnfencedBrokers returns the ids of brokers that are registered and not
// fenced, sorted.
func (m *Image) UnfencedBrokers() []int32 {
	var out []int32
	for id, b := range m.brokers {
		if !b.Fenced {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Live reports whether id is registered, unfenced and not shutting down: the
// brokers that may lead or join an ISR.
func (m *Image) Live(id int32) bool {
	b, ok := m.brokers[id]
	return ok && !b.Fenced && !b.ShuttingDown
}

// Topic returns one topic.
func (m *Image) Topic(name string) (TopicState, bool) {
	t, ok := m.topics[name]
	if !ok {
		return TopicState{}, false
	}
	return *t, true
}

// TopicNames returns every topic name, sorted.
func (m *Image) TopicNames() []string {
	out := make([]string, 0, len(m.topics))
	for n := range m.topics {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Topics returns every topic, sorted by name.
func (m *Image) Topics() []TopicState {
	out := make([]TopicState, 0, len(m.topics))
	for _, n := range m.TopicNames() {
		out = append(out, *m.topics[n])
	}
	return out
}

// Partition returns one partition.
func (m *Image) Partition(topic string, partition int32) (PartitionState, bool) {
	t, ok := m.topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return PartitionState{}, false
	}
	return t.Partitions[partition], true
}

// PartitionCount is the number of partitions over all topics.
func (m *Image) PartitionCount() int { return m.partitionCount }

// EachPartition calls fn for every partition, topics in name order, until fn
// returns false.
func (m *Image) EachPartition(fn func(p PartitionState) bool) {
	for _, n := range m.TopicNames() {
		for _, p := range m.topics[n].Partitions {
			if !fn(p) {
				return
			}
		}
	}
}

// PartitionsOf returns the partitions where id is a replica, in topic and
// partition order.
func (m *Image) PartitionsOf(id int32) []PartitionState {
	var out []PartitionState
	m.EachPartition(func(p PartitionState) bool {
		if p.HasReplica(id) {
			out = append(out, p)
		}
		return true
	})
	return out
}

// LeaderCount is the number of partitions id leads.
func (m *Image) LeaderCount(id int32) int {
	n := 0
	m.EachPartition(func(p PartitionState) bool {
		if p.Leader == id {
			n++
		}
		return true
	})
	return n
}
