package wire

// TypeCreatePartitions is the frame type of CreatePartitions (Kafka's
// CreatePartitions, `kafka-topics --alter --partitions N`). Part of the wire
// format: never renumber. (Declared here rather than in types.go's list so
// the request stays one file; 9 belongs to another request.)
const TypeCreatePartitions = 10

// CreatePartitionsRequest asks the active controller to raise a topic's
// partition count to Count. It may be sent to any node: a node that is not
// the active controller answers NotController with the controller as the
// hint, as for CreateTopicRequest.
//
// The count only grows: a Count below the current one, or equal to it
// ("topic T already has N partitions", as Kafka answers), is refused with
// InvalidPartitions, and so is one above the per-topic limit (10000). The
// new partitions get the topic's replication factor and are placed over the
// live brokers like a new topic's (continuing the topic's round-robin when
// the brokers are those it was created on); fewer live brokers than the
// replication factor is InvalidReplicationFactor. An unknown topic is
// UnknownTopicOrPartition. The topic keeps its id; existing partitions do
// not change.
//
// Keyed records move: producers put a key on hash(key) % count, so after the
// change most keys go to another partition than before (as with Kafka).
type CreatePartitionsRequest struct {
	Name  string `msgpack:"name"`
	Count int32  `msgpack:"count"` // the new total partition count
}

// CreatePartitionsResponse answers once the new partitions' records are
// committed (each new partition has a leader in the metadata; its replicas
// open their logs as they apply the records). TopicID and Count are the
// topic's after the change; on an error Count is the current count when the
// topic exists (0 otherwise), so a client that retried a request whose
// first answer was lost can tell that its count is in place.
// MetadataOffset is the offset of the image that holds the new partitions
// (as in CreateTopicResponse); absent (0) on an error and from older builds.
type CreatePartitionsResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	TopicID        string    `msgpack:"id"`
	Count          int32     `msgpack:"count"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
	MetadataOffset int64     `msgpack:"moff,omitempty"`
}
