package wire

import "github.com/vmihailenco/msgpack/v5"

// Client protocol messages (DESIGN §6). Batches travel as raw bytes in the
// segment record-batch format; they are never re-encoded. Batch and record
// fields are Bytes (a msgpack bin, like []byte): the transport writes
// large ones without copying and can decode them in place.

// MetadataRequest asks for brokers and the partitions of Topics (all if empty).
// A request naming more than MaxMetadataTopics distinct topics, or a name
// longer than MaxTopicNameLen, is refused whole with InvalidRequest.
type MetadataRequest struct {
	Topics []string `msgpack:"topics"`
	// WaitAbove and MaxWaitMs make the request a long poll: the node
	// answers once its metadata offset is above WaitAbove, or after
	// MaxWaitMs (at most MaxMetadataWaitMs) with what it has. A producer
	// whose request to a leader stalls sends one to another node, so it
	// learns of the leader change the moment that node applies it. Zero
	// MaxWaitMs: answer at once. Older nodes ignore both fields and answer
	// at once.
	WaitAbove int64 `msgpack:"wait,omitempty"`
	MaxWaitMs int32 `msgpack:"maxwait,omitempty"`
}

// MaxMetadataWaitMs caps MetadataRequest.MaxWaitMs.
const MaxMetadataWaitMs = 5000

// Limits on a MetadataRequest's topic names. With them, the answer for
// names that are no topic (each echoed with its error) stays far below the
// frame limit: MaxMetadataTopics * (MaxTopicNameLen + ~50 bytes) is under
// 3 MiB. Clients ask for all topics or one.
const (
	MaxMetadataTopics = 10_000
	MaxTopicNameLen   = 249 // as for a topic's own name
)

// BrokerInfo describes one node.
type BrokerInfo struct {
	ID                 int32  `msgpack:"id"`
	Addr               string `msgpack:"addr"`
	State              string `msgpack:"state"` // "alive" | "fenced"
	ControllerEligible bool   `msgpack:"ctrl"`
	Incarnation        int64  `msgpack:"inc"`
	// FencedAt is the metadata offset of the record that last fenced this
	// incarnation, or registered it (a registered incarnation starts
	// fenced); 0 from nodes older than the field. It changes at every
	// fencing, so a broker fenced and unfenced between two metadata reads
	// shows as a new FencedAt (or a new Incarnation) although its State
	// looks unchanged.
	FencedAt uint64 `msgpack:"fenced_at"`
	// MetadataVersion is the highest metadata version the broker's build
	// applies, as registered (1 for builds from before versions); 0 from
	// nodes older than the field.
	MetadataVersion int32 `msgpack:"mv,omitempty"`
	// Rack is the broker's --rack as registered; omitted when not set.
	Rack string `msgpack:"rack,omitempty"`
}

// PartitionMetadata is one partition's current leadership.
type PartitionMetadata struct {
	Partition      int32   `msgpack:"p"`
	Leader         int32   `msgpack:"leader"` // -1 while offline
	LeaderEpoch    int32   `msgpack:"epoch"`
	PartitionEpoch int32   `msgpack:"pepoch"`
	Replicas       []int32 `msgpack:"replicas"`
	ISR            []int32 `msgpack:"isr"`
	// ELR holds the eligible leader replicas (KIP-966: out of the ISR,
	// holding every record below the HW); omitted when empty.
	ELR            []int32 `msgpack:"elr,omitempty"`
	HighWatermark  int64   `msgpack:"hw"`  // filled by the leader in DescribeTopic paths; -1 if unknown
	LogStartOffset int64   `msgpack:"lso"` // likewise
	// AddingReplicas and RemovingReplicas are set while the partition is
	// being reassigned (ReassignPartitionRequest): Replicas is then the
	// target followed by the replicas being removed.
	AddingReplicas   []int32 `msgpack:"adding,omitempty"`
	RemovingReplicas []int32 `msgpack:"removing,omitempty"`
	// LostReplicas, with an empty ISR, name the replicas that lost their
	// storage as the partition's last in-sync replica; omitted when empty.
	LostReplicas []int32 `msgpack:"lost,omitempty"`
}

// TopicMetadata is one topic.
type TopicMetadata struct {
	Err               ErrorCode           `msgpack:"err"`
	Name              string              `msgpack:"name"`
	ID                string              `msgpack:"id"`
	ReplicationFactor int32               `msgpack:"rf"`
	MinISR            int32               `msgpack:"min_isr"`
	Partitions        []PartitionMetadata `msgpack:"partitions"`
	// Configs are the topic's configs as set (keys it does not set take
	// their defaults; min ISR is MinISR). Absent from older nodes.
	Configs map[string]string `msgpack:"configs"`
	// MaxMessageBytes is the largest batch the topic takes: its
	// max.message.bytes, else the cluster's message.max.bytes; 0 when
	// neither is set (the node's own limit), and from older nodes.
	MaxMessageBytes int32 `msgpack:"max_msg,omitempty"`
}

// MetadataResponse is the answering node's view of the metadata image.
type MetadataResponse struct {
	Err            ErrorCode       `msgpack:"err"`
	ControllerID   int32           `msgpack:"ctrl"` // -1 when none
	MetadataOffset int64           `msgpack:"moff"`
	Brokers        []BrokerInfo    `msgpack:"brokers"`
	Topics         []TopicMetadata `msgpack:"topics"`
	Message        string          `msgpack:"msg,omitempty"` // why Err, if it is set
}

// CreateTopicRequest may be sent to any node; it is forwarded to the active controller.
type CreateTopicRequest struct {
	Name              string            `msgpack:"name"`
	Partitions        int32             `msgpack:"partitions"`
	ReplicationFactor int32             `msgpack:"rf"`
	MinISR            int32             `msgpack:"min_isr"`
	Configs           map[string]string `msgpack:"configs"`
}

// CreateTopicResponse answers once the topic record is committed.
// MetadataOffset is the offset of the metadata image that holds the new
// topic: a node's broker has taken (opened or tried to open) its
// partitions once its DescribeCluster BrokerOffset reaches it. Absent (0)
// on a refusal and from older builds.
type CreateTopicResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	TopicID        string    `msgpack:"id"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
	MetadataOffset int64     `msgpack:"moff,omitempty"`
}

// DeleteTopicRequest / Response.
type DeleteTopicRequest struct {
	Name string `msgpack:"name"`
}
type DeleteTopicResponse struct {
	Err          ErrorCode `msgpack:"err"`
	Message      string    `msgpack:"msg"`
	ControllerID int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}

// DescribeClusterRequest / Response (cluster status).
type DescribeClusterRequest struct{}
type DescribeClusterResponse struct {
	Err            ErrorCode    `msgpack:"err"`
	ControllerID   int32        `msgpack:"ctrl"`
	MetadataOffset int64        `msgpack:"moff"` // of the answering node's metadata image
	Brokers        []BrokerInfo `msgpack:"brokers"`
	// Configs are the cluster configs as set (AlterClusterConfigsRequest);
	// omitted when none.
	Configs map[string]string `msgpack:"configs,omitempty"`
	// MetadataVersion is the metadata version the cluster uses (1 until a
	// change needing a later one; absent from older builds).
	MetadataVersion int32 `msgpack:"mv,omitempty"`
	// BrokerOffset is the metadata offset of the last image the answering
	// node's broker was brought in line with: cluster configs (cleaner
	// threads and throttles, the reassignment throttle) and partition
	// states are in force on it up to there. It may trail MetadataOffset
	// by the moment that takes. Absent (nil) from older builds.
	BrokerOffset *int64 `msgpack:"boff,omitempty"`
}

// InitProducerIDRequest asks for a cluster-unique producer id (allocated from
// controller blocks by any node).
type InitProducerIDRequest struct{}
type InitProducerIDResponse struct {
	Err           ErrorCode `msgpack:"err"`
	ProducerID    int64     `msgpack:"pid"`
	ProducerEpoch int16     `msgpack:"pepoch"`
}

// Acks values.
const (
	AcksNone   int8 = 0
	AcksLeader int8 = 1
	AcksAll    int8 = -1
)

// ProduceRequest carries one batch for each listed partition (to their leader).
type ProduceRequest struct {
	Acks      int8               `msgpack:"acks"`
	TimeoutMs int32              `msgpack:"timeout"`
	Topic     string             `msgpack:"topic"`
	Parts     []ProducePartition `msgpack:"parts"`
}

// ProducePartition is one batch for one partition.
type ProducePartition struct {
	Partition   int32 `msgpack:"p"`
	LeaderEpoch int32 `msgpack:"epoch"` // the client's known leader epoch; -1 = don't check
	Batch       Bytes `msgpack:"batch"`
}

// ProduceResponse answers per partition in request order.
type ProduceResponse struct {
	Parts []ProducePartitionResponse `msgpack:"parts"`
	// ThrottleMs is how long the node held this answer back because the
	// client's principal went over its producer_byte_rate quota
	// (quotas.go); omitted when 0.
	ThrottleMs int32 `msgpack:"throttle,omitempty"`
}

// ProducePartitionResponse: BaseOffset is the offset given to the batch's first record.
type ProducePartitionResponse struct {
	Partition   int32     `msgpack:"p"`
	Err         ErrorCode `msgpack:"err"`
	Message     string    `msgpack:"msg"`
	BaseOffset  int64     `msgpack:"base"`
	LeaderHint  int32     `msgpack:"leader"` // with NotLeader: current leader id or -1
	LeaderEpoch int32     `msgpack:"epoch"`
	LogStart    int64     `msgpack:"lso"`
	// LogAppendTime is the time, unix ms, the leader gave every record of
	// the batch, on a topic with message.timestamp.type=LogAppendTime (for
	// a retried batch already written, the original's; 0 if it is gone); 0
	// otherwise.
	LogAppendTime int64 `msgpack:"lat,omitempty"`
}

// FetchRequest is a consumer fetch (only below the HW), long-polled.
//
// Rack is the consumer's rack (Kafka's client.rack, KIP-392), "" for none.
// With it, a leader in another rack answers a partition that has an
// in-sync follower in the consumer's rack with no records and that
// follower's id (FetchPartitionResponse.PreferredReplica), and a follower
// serves the fetch itself, below its own HW, when the request's
// LeaderEpoch is the one it follows. Without it only leaders answer. Older
// nodes ignore it (their leaders answer as before).
type FetchRequest struct {
	MaxWaitMs int32            `msgpack:"wait"`
	MinBytes  int32            `msgpack:"min"`
	MaxBytes  int32            `msgpack:"max"`
	Topic     string           `msgpack:"topic"`
	Parts     []FetchPartition `msgpack:"parts"`
	Rack      string           `msgpack:"rack,omitempty"`
}

// FetchPartition asks for records from Offset.
//
// LastFetchedEpoch is the leader epoch of the batch holding the record just
// before Offset, as the consumer received it (-1: unknown, don't check).
// When it is set the leader first checks that its own log agrees with the
// consumer's history up to Offset (KIP-320): if its log left that epoch
// before Offset (its end offset for the epoch is below Offset), or does not
// have it (only older epochs, or only newer ones below Offset), the
// consumer's position follows records the leader's log no longer has (an
// unclean election, or records lost under --fsync never and written again),
// and the answer carries no records but the diverging epoch and its end
// offset (FetchPartitionResponse.Diverging). An epoch newer than the
// leader's own is answered with UnknownLeaderEpoch: the consumer has seen a
// later leader than this one knows of. A message without the field (an
// older client) decodes with -1.
type FetchPartition struct {
	Partition        int32 `msgpack:"p"`
	Offset           int64 `msgpack:"off"`
	MaxBytes         int32 `msgpack:"max"`
	LeaderEpoch      int32 `msgpack:"epoch"` // -1 = don't check
	LastFetchedEpoch int32 `msgpack:"lfe"`   // -1 = unknown, don't check
}

// DecodeMsgpack implements msgpack.CustomDecoder: a LastFetchedEpoch the
// message does not carry is -1 (don't check), not 0, which is an epoch.
func (p *FetchPartition) DecodeMsgpack(dec *msgpack.Decoder) error {
	type plain FetchPartition // no DecodeMsgpack: decoded field by field
	v := plain{LastFetchedEpoch: -1}
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*p = FetchPartition(v)
	return nil
}

// FetchResponse holds whole batches per partition.
type FetchResponse struct {
	Parts []FetchPartitionResponse `msgpack:"parts"`
	// ThrottleMs, when the client's principal is over its
	// consumer_byte_rate quota on this node (quotas.go), is how long to
	// wait before fetching from it again: a fetch that comes sooner is
	// held back until then (KIP-219). Omitted when 0.
	ThrottleMs int32 `msgpack:"throttle,omitempty"`
}

// FetchPartitionResponse: Records is zero or more whole batches.
//
// Diverging, when set, answers a LastFetchedEpoch that the leader's log does
// not agree with (KIP-320): Err is None and Records empty, and the
// consumer's records from Diverging.EndOffset on (at the latest) are not
// the leader's. It is nil otherwise, and in an answer from a broker that
// does not check (the field is absent).
type FetchPartitionResponse struct {
	Partition     int32           `msgpack:"p"`
	Err           ErrorCode       `msgpack:"err"`
	Message       string          `msgpack:"msg"`
	HighWatermark int64           `msgpack:"hw"`
	LogStart      int64           `msgpack:"lso"`
	LogEnd        int64           `msgpack:"leo"`
	LeaderHint    int32           `msgpack:"leader"`
	LeaderEpoch   int32           `msgpack:"epoch"`
	Records       Bytes           `msgpack:"records"`
	Diverging     *EpochEndOffset `msgpack:"div,omitempty"`
	// PreferredReplica (KIP-392), when not 0, is the in-sync follower in
	// the consumer's rack (FetchRequest.Rack) to fetch this partition
	// from; the answer then holds no records.
	PreferredReplica int32 `msgpack:"pref,omitempty"`
}

// EpochEndOffset is a leader's answer to "where does epoch E end in your
// log" (Kafka's OffsetsForLeaderEpoch), given as a fetch's divergence.
//
// Epoch is the largest epoch <= the consumer's LastFetchedEpoch that the
// leader's log knows, and EndOffset the offset where its log left that
// epoch (the start of its next epoch, or its log end). Epoch is -1 when the
// leader knows no epoch that old: EndOffset is then its log start offset.
// When Epoch < LastFetchedEpoch, EndOffset may be at or above the
// consumer's position: the consumer's own end offset for Epoch then bounds
// where the two histories part, as for a follower
// (replica.TruncationOffset).
type EpochEndOffset struct {
	Epoch     int32 `msgpack:"epoch"`
	EndOffset int64 `msgpack:"end"`
}

// ListOffsets timestamps.
const (
	Earliest int64 = -2
	Latest   int64 = -1
)

// ListOffsetsRequest asks the leader for an offset per partition: Earliest,
// Latest (the HW), or the first offset at/after a timestamp.
type ListOffsetsRequest struct {
	Topic string                 `msgpack:"topic"`
	Parts []ListOffsetsPartition `msgpack:"parts"`
}
type ListOffsetsPartition struct {
	Partition int32 `msgpack:"p"`
	Timestamp int64 `msgpack:"ts"`
}
type ListOffsetsResponse struct {
	Parts []ListOffsetsPartitionResponse `msgpack:"parts"`
}
type ListOffsetsPartitionResponse struct {
	Partition  int32     `msgpack:"p"`
	Err        ErrorCode `msgpack:"err"`
	Offset     int64     `msgpack:"off"`
	LeaderHint int32     `msgpack:"leader"`
}
