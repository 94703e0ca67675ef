// Package wire holds the request and response messages exchanged between
// clients and nodes and between nodes, their frame types, and error codes.
// Bodies are msgpack (quic frames: length | type | msgpack body). Every message
// is a plain struct with msgpack tags; field tags are part of the wire format:
// add fields, never renumber or rename tags.
package wire

import "paymentlog/quic"

// Frame types. A request of type T is answered by a frame of the same type T
// (or quic's error frame). Part of the wire format: never renumber.
const (
	TypeMetadata        quic.FrameType = 1
	TypeCreateTopic     quic.FrameType = 2
	TypeDeleteTopic     quic.FrameType = 3
	TypeDescribeCluster quic.FrameType = 4
	TypeInitProducerID  quic.FrameType = 5
	TypeProduce         quic.FrameType = 6
	TypeFetch           quic.FrameType = 7
	TypeListOffsets     quic.FrameType = 8

	// Node-to-node.
	TypeReplicaFetch        quic.FrameType = 20 // session: follower fetch session
	TypeAlterPartition      quic.FrameType = 21
	TypeBrokerRegister      quic.FrameType = 22
	TypeBrokerHeartbeat     quic.FrameType = 23
	TypeRaftMessage         quic.FrameType = 24 // session: raft peer stream
	TypeControlledShutdown  quic.FrameType = 25
	TypeDescribeReplica     quic.FrameType = 26 // a replica's log state, for checkers and tests
	TypeAllocateProducerIDs quic.FrameType = 27 // a producer-id block from the active controller
)
