package wire

// TypeDescribeProducers lists the idempotent producers a partition replica
// remembers (Kafka's DescribeProducers, kafka-transactions.sh
// describe-producers): who writes the partition, and the state its
// OutOfOrderSequence, UnknownProducerID and duplicate answers come from.
// It is sent to each partition's leader, or to one broker for its own
// replicas (AnyReplica). Read-only; needs describe on the topic.
const TypeDescribeProducers = 35

// MaxDescribeProducersParts bounds a DescribeProducersRequest's partitions
// (a topic's most).
const MaxDescribeProducersParts = 10_000

// MaxDescribedProducers bounds the producers one DescribeProducersResponse
// lists, all partitions together, so that the answer fits a frame (about
// 100 bytes each); the rest are counted in DescribeProducersPartition.Omitted.
const MaxDescribedProducers = 50_000

// DescribeProducersRequest asks for the producer state of Partitions of
// Topic (none: every partition of it this node holds a replica of; those it
// leads, without AnyReplica). Without AnyReplica only the partition's
// leader answers (NotLeader with a hint elsewhere); with it, this node's
// replica answers whatever its role: a follower's state is rebuilt from the
// same log, so comparing the two shows a replica that diverged.
type DescribeProducersRequest struct {
	Topic      string  `msgpack:"topic"`
	Partitions []int32 `msgpack:"parts"`
	AnyReplica bool    `msgpack:"any,omitempty"`
}

// DescribeProducersResponse: Err refuses the whole request (authorization,
// too many partitions); otherwise each partition asked for (or held) has
// its entry.
type DescribeProducersResponse struct {
	Err     ErrorCode                    `msgpack:"err"`
	Message string                       `msgpack:"msg,omitempty"`
	Parts   []DescribeProducersPartition `msgpack:"parts"`
}

// DescribeProducersPartition is one replica's producer state. Err is
// UnknownTopicOrPartition (no replica here), NotLeader (LeaderHint: the
// leader it knows, -1 none) or KafkaStorageError (the state could not be
// rebuilt after a truncation: Message says why; every idempotent batch is
// refused until a restart replays the log).
type DescribeProducersPartition struct {
	Partition  int32     `msgpack:"p"`
	Err        ErrorCode `msgpack:"err"`
	Message    string    `msgpack:"msg,omitempty"`
	LeaderHint int32     `msgpack:"leader"`
	// IsLeader: the answering replica leads the partition.
	IsLeader bool `msgpack:"is_leader,omitempty"`
	// ExpirationMs is the replica's producer id expiration
	// (--producer-id-expiration, Kafka's producer.id.expiration.ms).
	ExpirationMs int64           `msgpack:"expiration"`
	Producers    []ProducerState `msgpack:"producers"`
	// Omitted counts the producers left out past MaxDescribedProducers
	// (the highest producer ids).
	Omitted int32 `msgpack:"omitted,omitempty"`
}

// ProducerState is one idempotent producer on one partition replica.
type ProducerState struct {
	ProducerID    int64 `msgpack:"pid"`
	ProducerEpoch int16 `msgpack:"epoch"`
	// LastSequence is the last sequence number of its last batch; the
	// next batch must start right after it.
	LastSequence int32 `msgpack:"seq"`
	// LastTimestamp (Unix ms) is when the replica counts the producer as
	// last seen: its largest record timestamp or, when later, the broker's
	// clock when it appended, copied or replayed the batch; -1 unknown (a
	// producer snapshot of version 1).
	LastTimestamp int64 `msgpack:"ts"`
	// FirstOffset and LastOffset are the offsets of its last batch.
	FirstOffset int64 `msgpack:"first"`
	LastOffset  int64 `msgpack:"last"`
	// Batches is how many of its batches are remembered for duplicate
	// detection (at most 5).
	Batches int32 `msgpack:"batches"`
	// ExpiresInMs is how long until the replica forgets the producer
	// without another batch (0: at its next expiry check); -1 while it has
	// a batch above the high watermark (never expired then) or its
	// LastTimestamp is unknown.
	ExpiresInMs int64 `msgpack:"expires"`
}
