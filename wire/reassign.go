package wire

// TypeReassignPartition is the frame type of ReassignPartition (Kafka's
// AlterPartitionReassignments for one partition, `kafka-reassign-partitions
// --execute` / `--cancel`). Part of the wire format: never renumber.
const TypeReassignPartition = 11

// ReassignPartitionRequest asks the active controller to move a partition
// onto the brokers in Replicas (in preference order: the first is the
// preferred leader), or with Cancel to undo a reassignment in progress
// (Replicas is then ignored). It may be sent to any node: a node that is
// not the active controller answers NotController with the hint.
//
// Replicas must name exactly the topic's replication factor of distinct
// registered brokers (InvalidReplicationFactor, InvalidRequest). The
// partition's new replicas copy the log from its leader; once all of them
// are in the ISR the old ones leave it and delete their copies, and if the
// leader was one of them, leadership moves to the first target replica in
// sync. A target equal to the one in place is accepted and changes nothing;
// a cancel with nothing in progress is InvalidRequest; a change that would
// leave no in-sync replica, or none live to lead, is IneligibleReplica.
type ReassignPartitionRequest struct {
	Topic     string  `msgpack:"topic"`
	Partition int32   `msgpack:"p"`
	Replicas  []int32 `msgpack:"replicas"`
	Cancel    bool    `msgpack:"cancel"`
}

// ReassignPartitionResponse answers once the change is committed (the
// reassignment has started, or completed at once when no replica had to be
// added). Partition is the partition's state after it, also on a refusal
// when the partition exists, so a client that retried a request whose first
// answer was lost can tell whether it is in place.
type ReassignPartitionResponse struct {
	Err          ErrorCode         `msgpack:"err"`
	Message      string            `msgpack:"msg"`
	Partition    PartitionMetadata `msgpack:"partition"`
	ControllerID int32             `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}
