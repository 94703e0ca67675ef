package wire

import "fmt"

// ErrorCode is carried in every response's "err" field; 0 is success.
// Part of the wire format: never renumber.
type ErrorCode int16

const (
	None                         ErrorCode = 0
	Unknown                      ErrorCode = 1
	NotLeader                    ErrorCode = 2 // retriable; response carries the leader hint
	NotEnoughReplicas            ErrorCode = 3 // retriable
	NotEnoughReplicasAfterAppend ErrorCode = 4 // retriable
	OffsetOutOfRange             ErrorCode = 5
	UnknownTopicOrPartition      ErrorCode = 6 // retriable (metadata may be stale)
	CorruptMessage               ErrorCode = 7
	RecordTooLarge               ErrorCode = 8
	DuplicateSequence            ErrorCode = 9
	OutOfOrderSequence           ErrorCode = 10
	Timeout                      ErrorCode = 11 // retriable
	TopicAlreadyExists           ErrorCode = 12
	InvalidReplicationFactor     ErrorCode = 13
	InvalidRequest               ErrorCode = 14
	NotController                ErrorCode = 15 // retriable
	FencedLeaderEpoch            ErrorCode = 16 // retriable
	UnknownLeaderEpoch           ErrorCode = 17 // retriable
	StaleBrokerEpoch             ErrorCode = 18
	InvalidProducerEpoch         ErrorCode = 19
	UnknownProducerID            ErrorCode = 20
	LeaderNotAvailable           ErrorCode = 21 // retriable
	BrokerNotAvailable           ErrorCode = 22 // retriable
	KafkaStorageError            ErrorCode = 23 // retriable: disk full or I/O error on the leader
	InvalidPartitions            ErrorCode = 24
	InvalidTopic                 ErrorCode = 25
	InvalidUpdateVersion         ErrorCode = 26 // AlterPartition with a stale partition epoch: refresh metadata, recompute
	IneligibleReplica            ErrorCode = 27 // AlterPartition adding a fenced or shutting-down broker to the ISR
	// OffsetNotAvailable (retriable): ListOffsets for the latest offset or
	// a timestamp while a new leader's HW is still below the start offset
	// of its leader epoch, i.e. possibly below the HW its predecessor had
	// made visible (Kafka's OFFSET_NOT_AVAILABLE, KIP-207). It passes once
	// the leader's followers have fetched from it.
	OffsetNotAvailable ErrorCode = 28
	// InvalidConfig: a CreateTopic or AlterConfigs naming an unknown config
	// key, a bad value, or a change that cannot be made (Kafka's
	// INVALID_CONFIG). The message names the key.
	InvalidConfig ErrorCode = 29
	// UnsupportedVersion: a change whose records some registered node's
	// version could not apply (a rolling upgrade not finished; Kafka's
	// UNSUPPORTED_VERSION / feature levels). The message names the nodes.
	UnsupportedVersion ErrorCode = 30
	// BrokerNotRegistered: an UnregisterBroker naming a broker id the
	// cluster does not have registered (Kafka's BROKER_ID_NOT_REGISTERED).
	BrokerNotRegistered ErrorCode = 31
	// InvalidGroupID: a group request naming a group that is not a valid
	// name (group_offsets.go; Kafka's INVALID_GROUP_ID).
	InvalidGroupID ErrorCode = 32
	// GroupIDNotFound: a DeleteGroup naming a group the cluster does not
	// have (Kafka's GROUP_ID_NOT_FOUND).
	GroupIDNotFound ErrorCode = 33
	// UnknownMemberID: a group heartbeat or commit naming a member the
	// active controller does not know (its session timed out, or the
	// controller changed): join again (group_members.go; Kafka's
	// UNKNOWN_MEMBER_ID).
	UnknownMemberID ErrorCode = 34
	// NonEmptyGroup: a request that needs a group without members (a
	// commit by no member, a deletion) while it has some (Kafka's
	// NON_EMPTY_GROUP).
	NonEmptyGroup ErrorCode = 35
	// FencedMemberEpoch: a group heartbeat or commit of a member the
	// active controller removed because it kept partitions it was told to
	// release for longer than its rebalance timeout: release every
	// partition without committing, then join again owning nothing
	// (group_members.go; Kafka's FENCED_MEMBER_EPOCH).
	FencedMemberEpoch ErrorCode = 36
	// UnreleasedInstanceID: a group join naming an instance id that a
	// running member holds (one that did not leave with
	// StaticLeaveEpoch): another process with the same instance id, or
	// one that died; join again once its session times out
	// (group_members.go; Kafka's UNRELEASED_INSTANCE_ID).
	UnreleasedInstanceID ErrorCode = 37
	// TopicAuthorizationFailed, GroupAuthorizationFailed and
	// ClusterAuthorizationFailed: the client's principal may not do this
	// to that topic, group or the cluster (wire/acls.go; Kafka's codes
	// of the same names). Not retriable: the same principal gets the same
	// answer until an ACL changes.
	TopicAuthorizationFailed   ErrorCode = 38
	GroupAuthorizationFailed   ErrorCode = 39
	ClusterAuthorizationFailed ErrorCode = 40

	// UnsupportedCompressionType: a produced batch's compression codec is
	// one this node does not read (see segment.Codec).
	UnsupportedCompressionType ErrorCode = 41
	// InvalidRecord: a produced batch holds a record the topic does not
	// take: one without a key on a topic whose cleanup.policy includes
	// compact (Kafka's INVALID_RECORD). Not retriable: the batch is
	// refused whole, nothing of it written.
	InvalidRecord ErrorCode = 42
	// PolicyViolation: a request the topic's configs forbid: DeleteRecords
	// on a topic that compacts without deleting (Kafka's POLICY_VIOLATION).
	PolicyViolation ErrorCode = 43
	// InvalidTimestamp: a produced batch holds a record whose timestamp
	// lies further from the leader's clock than the topic's
	// message.timestamp.before.max.ms or .after.max.ms allow (Kafka's
	// INVALID_TIMESTAMP). Not retriable: the batch is refused whole.
	InvalidTimestamp ErrorCode = 44
)

var codeNames = map[ErrorCode]string{
	None: "None", Unknown: "Unknown", NotLeader: "NotLeader", NotEnoughReplicas: "NotEnoughReplicas",
	NotEnoughReplicasAfterAppend: "NotEnoughReplicasAfterAppend", OffsetOutOfRange: "OffsetOutOfRange",
	UnknownTopicOrPartition: "UnknownTopicOrPartition", CorruptMessage: "CorruptMessage",
	RecordTooLarge: "RecordTooLarge", DuplicateSequence: "DuplicateSequence",
	OutOfOrderSequence: "OutOfOrderSequence", Timeout: "Timeout", TopicAlreadyExists: "TopicAlreadyExists",
	InvalidReplicationFactor: "InvalidReplicationFactor", InvalidRequest: "InvalidRequest",
	NotController: "NotController", FencedLeaderEpoch: "FencedLeaderEpoch",
	UnknownLeaderEpoch: "UnknownLeaderEpoch", StaleBrokerEpoch: "StaleBrokerEpoch",
	InvalidProducerEpoch: "InvalidProducerEpoch", UnknownProducerID: "UnknownProducerID",
	LeaderNotAvailable: "LeaderNotAvailable", BrokerNotAvailable: "BrokerNotAvailable",
	KafkaStorageError: "StorageError", InvalidPartitions: "InvalidPartitions", InvalidTopic: "InvalidTopic",
	InvalidUpdateVersion: "InvalidUpdateVersion", IneligibleReplica: "IneligibleReplica",
	OffsetNotAvailable: "OffsetNotAvailable", InvalidConfig: "InvalidConfig", UnsupportedVersion: "UnsupportedVersion",
	BrokerNotRegistered: "BrokerNotRegistered", InvalidGroupID: "InvalidGroupID", GroupIDNotFound: "GroupIDNotFound",
	UnknownMemberID: "UnknownMemberID", NonEmptyGroup: "NonEmptyGroup", FencedMemberEpoch: "FencedMemberEpoch",
	UnreleasedInstanceID: "UnreleasedInstanceID", TopicAuthorizationFailed: "TopicAuthorizationFailed",
	GroupAuthorizationFailed: "GroupAuthorizationFailed", ClusterAuthorizationFailed: "ClusterAuthorizationFailed",
	UnsupportedCompressionType: "UnsupportedCompressionType", InvalidRecord: "InvalidRecord",
	PolicyViolation: "PolicyViolation", InvalidTimestamp: "InvalidTimestamp",
}

var retriable = map[ErrorCode]bool{
	NotLeader: true, NotEnoughReplicas: true, NotEnoughReplicasAfterAppend: true,
	UnknownTopicOrPartition: true, Timeout: true, NotController: true, FencedLeaderEpoch: true,
	UnknownLeaderEpoch: true, LeaderNotAvailable: true, BrokerNotAvailable: true, KafkaStorageError: true,
	OffsetNotAvailable: true,
}

func (c ErrorCode) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return fmt.Sprintf("ErrorCode(%d)", int16(c))
}

// Retriable reports whether a client should retry after refreshing metadata.
func (c ErrorCode) Retriable() bool { return retriable[c] }

// Error is an ErrorCode with a message, usable as a Go error.
type Error struct {
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return e.Code.String()
	}
	return e.Code.String() + ": " + e.Message
}

// Err returns nil for None, else an *Error.
func (c ErrorCode) Err(msg string) error {
	if c == None {
		return nil
	}
	return &Error{Code: c, Message: msg}
}
