package wire

// TypeAlterReplicationFactor is the frame type of AlterReplicationFactor
// (what `kafka-reassign-partitions` does with a plan listing more or fewer
// replicas per partition). Part of the wire format: never renumber.
const TypeAlterReplicationFactor = 12

// AlterReplicationFactorRequest asks the active controller to give every
// partition of Topic ReplicationFactor replicas, and the topic that
// replication factor for partitions added later. It may be sent to any
// node: a node that is not the active controller answers NotController with
// the hint.
//
// Raising it adds, per partition, live brokers outside its target (one a
// reassignment in progress is removing first, then those holding the
// fewest of the topic's replicas) at the end of its preference order; they copy the log from the leader and join the ISR when
// caught up, and the partition keeps its replicas in sync meanwhile.
// Lowering it removes replicas whose broker is not live, then those out of
// the ISR, then the last in preference order, never the leader; they leave
// once the replicas kept are all in sync. Partitions being reassigned get
// the new size from their target.
//
// Refused: an unknown topic (UnknownTopicOrPartition); a factor outside
// 1-16, below the topic's min.insync.replicas, or above the live brokers a
// partition can use (InvalidReplicationFactor); a partition with no in-sync
// replica or none live to lead (IneligibleReplica). A factor already in
// place on every partition is accepted and changes nothing (a retry).
//
// Assignment, when set, names every partition's new replicas instead
// (index: partition; ReplicationFactor distinct registered brokers each,
// the first the preferred leader), as a reassignment plan that changes
// the count does: the replicas are not picked and then moved again.
// Refused with InvalidRequest unless it names every partition; with
// InvalidReplicationFactor for a list of another size. Nodes older than
// the field ignore it and pick the replicas.
type AlterReplicationFactorRequest struct {
	Topic             string    `msgpack:"topic"`
	ReplicationFactor int32     `msgpack:"rf"`
	Assignment        [][]int32 `msgpack:"assign,omitempty"`
}

// AlterReplicationFactorResponse answers once the change is committed (the
// reassignments have started; those that only remove replicas in sync have
// completed). ReplicationFactor is the topic's after it, also on a refusal
// when the topic exists (0 otherwise).
type AlterReplicationFactorResponse struct {
	Err               ErrorCode `msgpack:"err"`
	Message           string    `msgpack:"msg"`
	ReplicationFactor int32     `msgpack:"rf"`
	ControllerID      int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}
