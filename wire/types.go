// Package wire holds the request and response messages exchanged between
// clients and nodes and between nodes, their frame types, and error codes.
// Bodies are msgpack (quic frames: length | type | msgpack body). Every message
// is a plain struct with msgpack tags; field tags are part of the wire format:
// add fields, never renumber or rename tags.
package wire

// Frame types (quic.FrameType values, untyped so that this package depends
// on nothing but msgpack). A request of type T is answered by a frame of the
// same type T (or quic's error frame). Part of the wire format: never renumber.
const (
	TypeMetadata        = 1
	TypeCreateTopic     = 2
	TypeDeleteTopic     = 3
	TypeDescribeCluster = 4
	TypeInitProducerID  = 5
	TypeProduce         = 6
	TypeFetch           = 7
	TypeListOffsets     = 8
	TypeAlterConfigs    = 9 // a topic's configs and min ISR (alter_configs.go)
	// 10 CreatePartitions, 11 ReassignPartition, 12 AlterReplicationFactor,
	// 13 AlterClusterConfigs, 14 UnregisterBroker, 15..18 the group
	// requests (group_offsets.go), 29..33 ACLs and quotas, 34
	// DeleteRecords and 35 DescribeProducers are declared in their own files.

	// Node-to-node.
	TypeReplicaFetch        = 20 // session: follower fetch session
	TypeAlterPartition      = 21
	TypeBrokerRegister      = 22
	TypeBrokerHeartbeat     = 23
	TypeRaftMessage         = 24 // session: raft peer stream
	TypeControlledShutdown  = 25
	TypeDescribeReplica     = 26 // a replica's log state (topic describe --replicas, checkers, tests)
	TypeAllocateProducerIDs = 27 // a producer-id block from the active controller
	TypeDescribeQuorum      = 28 // a node's view of the controller quorum (read-only)
)

// ClusterActionTypes are the frame types only a node may send (Kafka's
// ClusterAction): under mutual TLS a node refuses them, with quic's
// CodeClusterAuthorizationFailed, from a peer whose certificate is not a
// node certificate; and where a request names the node it comes from
// (BrokerID, FollowerID, the raft sender) that id must be the certificate's.
// A client certificate that could send them could rewrite the controller's
// raft log, fence brokers or shrink ISRs.
//
// TypeDescribeReplica is deliberately not one of them: it is read-only, it
// reveals a replica's offsets and epoch (what Metadata and ListOffsets
// already tell a client about the leader), and checkers and tests (bench
// chaos's nemesis) call it with a client certificate.
var ClusterActionTypes = [...]uint8{
	TypeReplicaFetch, TypeAlterPartition, TypeBrokerRegister, TypeBrokerHeartbeat,
	TypeRaftMessage, TypeControlledShutdown, TypeAllocateProducerIDs,
}
