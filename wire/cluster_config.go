package wire

// TypeAlterClusterConfigs is the frame type of AlterClusterConfigs (Kafka's
// IncrementalAlterConfigs for the cluster-wide broker default,
// `kafka-configs --entity-type brokers --entity-default --alter`). Part of
// the wire format: never renumber.
const TypeAlterClusterConfigs = 13

// AlterClusterConfigsRequest asks the active controller to set and delete
// cluster configs, which every node applies without a restart. It may be
// sent to any node: a node that is not the active controller answers
// NotController with the hint.
//
// Keys: reassignment.throttle.bytes (bytes per second each node copies for
// replicas a reassignment is adding; 0 unlimited; deleted: each node's
// --reassignment-throttle), log.cleaner.io.max.bytes.per.second (bytes per
// second each node's log cleaner reads and writes; 0 unlimited; deleted:
// each node's --log-cleaner-io-max-bytes-per-second), log.cleaner.threads
// (how many partitions each node's log cleaner compacts at once, from its
// next pass; >= 1, clamped by each node to its dedupe buffer; deleted: each
// node's --log-cleaner-threads),
// log.scrub.quarantine.retention.ms (how long each node keeps what a scrub
// repair set aside before removing it once redundant; 0 never; deleted:
// each node's --log-scrub-quarantine-retention), offsets.retention.ms
// (how long a consumer group that stopped committing keeps its offsets;
// -1 forever; deleted: 7 days), log.message.timestamp.type,
// log.message.timestamp.before.max.ms, log.message.timestamp.after.max.ms,
// message.max.bytes and compression.type (the defaults of the topic configs
// message.timestamp.*, max.message.bytes and compression.type, for topics
// that do not set them). An unknown key, a bad value or a key both set
// and deleted is refused whole with InvalidConfig; a change that changes
// nothing is accepted (a retry).
type AlterClusterConfigsRequest struct {
	Set    map[string]string `msgpack:"set"`
	Delete []string          `msgpack:"del"`
}

// AlterClusterConfigsResponse answers once the change is committed.
// MetadataOffset is the metadata offset it is in (a node whose
// DescribeCluster answer shows that offset or a later one applies it).
type AlterClusterConfigsResponse struct {
	Err            ErrorCode `msgpack:"err"`
	Message        string    `msgpack:"msg"`
	MetadataOffset int64     `msgpack:"moff"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}
