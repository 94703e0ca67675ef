package wire

// Node-to-node messages.

// ReplicaFetchOpen opens a follower fetch session (frame TypeReplicaFetch).
type ReplicaFetchOpen struct {
	FollowerID  int32 `msgpack:"follower"`
	Incarnation int64 `msgpack:"inc"`
}

// ReplicaFetchRequest is sent repeatedly on the session; the leader answers
// with a ReplicaFetchResponse when any partition has data or an error, when
// an HW change has waited the leader's HW delay (10 ms by default) without
// records to carry it, or when MaxWaitMs passes.
type ReplicaFetchRequest struct {
	MaxWaitMs int32                   `msgpack:"wait"`
	MaxBytes  int32                   `msgpack:"max"`
	Parts     []ReplicaFetchPartition `msgpack:"parts"`
}

// ReplicaFetchPartition reports the follower's log end and last fetched epoch.
type ReplicaFetchPartition struct {
	Topic              string `msgpack:"t"`
	Partition          int32  `msgpack:"p"`
	FetchOffset        int64  `msgpack:"off"`   // the follower's LEO
	LastFetchedEpoch   int32  `msgpack:"lfe"`   // epoch of the follower's last batch, -1 if none
	CurrentLeaderEpoch int32  `msgpack:"epoch"` // the epoch the follower believes the leader has
	HighWatermark      int64  `msgpack:"hw"`    // the follower's HW (informational)
}

type ReplicaFetchResponse struct {
	Parts []ReplicaFetchPartitionResponse `msgpack:"parts"`
}

// ReplicaFetchPartitionResponse: when DivergingEpoch >= 0, the follower must
// truncate to DivergingEndOffset (KIP-320) before fetching again.
type ReplicaFetchPartitionResponse struct {
	Topic              string    `msgpack:"t"`
	Partition          int32     `msgpack:"p"`
	Err                ErrorCode `msgpack:"err"`
	HighWatermark      int64     `msgpack:"hw"`
	LogStart           int64     `msgpack:"lso"`
	LogEnd             int64     `msgpack:"leo"`
	DivergingEpoch     int32     `msgpack:"div_epoch"`
	DivergingEndOffset int64     `msgpack:"div_end"`
	Records            Bytes     `msgpack:"records"`
}

// AlterPartitionRequest asks the controller to change an ISR.
type AlterPartitionRequest struct {
	BrokerID       int32   `msgpack:"broker"`
	Incarnation    int64   `msgpack:"inc"`
	Topic          string  `msgpack:"t"`
	Partition      int32   `msgpack:"p"`
	LeaderEpoch    int32   `msgpack:"epoch"`
	PartitionEpoch int32   `msgpack:"pepoch"`
	NewISR         []int32 `msgpack:"isr"`
}
type AlterPartitionResponse struct {
	Err            ErrorCode `msgpack:"err"`
	ISR            []int32   `msgpack:"isr"`
	LeaderEpoch    int32     `msgpack:"epoch"`
	PartitionEpoch int32     `msgpack:"pepoch"`
	Message        string    `msgpack:"msg"`
	ControllerID   int32     `msgpack:"ctrl"` // with NotController: the active controller, -1 if unknown
}

// BrokerRegisterRequest is sent by every node at start (to any controller;
// forwarded to the active one).
type BrokerRegisterRequest struct {
	BrokerID           int32  `msgpack:"broker"`
	Addr               string `msgpack:"addr"`
	Incarnation        int64  `msgpack:"inc"` // unique per process start
	ControllerEligible bool   `msgpack:"ctrl"`
}
type BrokerRegisterResponse struct {
	Err          ErrorCode `msgpack:"err"`
	Message      string    `msgpack:"msg"`
	ControllerID int32     `msgpack:"ctrl"` // the active controller (a hint with NotController), -1 if unknown
}

// BrokerHeartbeatRequest keeps a broker's session alive and reports how far it
// has applied the metadata log (it is unfenced once caught up).
type BrokerHeartbeatRequest struct {
	BrokerID       int32 `msgpack:"broker"`
	Incarnation    int64 `msgpack:"inc"`
	MetadataOffset int64 `msgpack:"moff"`
	WantShutdown   bool  `msgpack:"shutdown"`
}
type BrokerHeartbeatResponse struct {
	Err           ErrorCode `msgpack:"err"`
	Fenced        bool      `msgpack:"fenced"`
	ShutdownReady bool      `msgpack:"shutdown_ready"` // no leaderships left: safe to exit
	ControllerID  int32     `msgpack:"ctrl"`
	Message       string    `msgpack:"msg"`
}

// AllocateProducerIDsRequest asks the active controller for a block of
// producer ids for BrokerID (frame TypeAllocateProducerIDs).
type AllocateProducerIDsRequest struct {
	BrokerID    int32 `msgpack:"broker"`
	Incarnation int64 `msgpack:"inc"`
}

// AllocateProducerIDsResponse: ids [Start, Start+Len) belong to the broker.
type AllocateProducerIDsResponse struct {
	Err          ErrorCode `msgpack:"err"`
	Message      string    `msgpack:"msg"`
	Start        int64     `msgpack:"start"`
	Len          int64     `msgpack:"len"`
	ControllerID int32     `msgpack:"ctrl"`
}

// DescribeReplicaRequest asks a node for its local replica state (tests, checkers).
type DescribeReplicaRequest struct {
	Topic     string `msgpack:"t"`
	Partition int32  `msgpack:"p"`
}
type DescribeReplicaResponse struct {
	Err           ErrorCode `msgpack:"err"`
	LogStart      int64     `msgpack:"lso"`
	LogEnd        int64     `msgpack:"leo"`
	HighWatermark int64     `msgpack:"hw"`
	LeaderEpoch   int32     `msgpack:"epoch"`
	IsLeader      bool      `msgpack:"leader"`
}
