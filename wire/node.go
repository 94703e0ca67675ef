package wire

// Node-to-node messages.

// ReplicaFetchOpen opens a follower fetch session (frame TypeReplicaFetch).
// Incarnation is the follower's registered incarnation (its broker epoch):
// the leader forgets what an earlier process of the follower fetched and
// names the incarnation when it proposes the follower's return to the ISR.
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
// TopicID is the topic incarnation the follower's replica belongs to: a
// leader whose partition has another id (the topic was deleted and
// re-created, and one of the two has not applied it yet) answers
// UnknownTopicOrPartition instead of counting or truncating the follower.
type ReplicaFetchPartition struct {
	Topic              string `msgpack:"t"`
	TopicID            string `msgpack:"tid"`
	Partition          int32  `msgpack:"p"`
	FetchOffset        int64  `msgpack:"off"`   // the follower's LEO
	LastFetchedEpoch   int32  `msgpack:"lfe"`   // epoch of the follower's last batch, -1 if none
	CurrentLeaderEpoch int32  `msgpack:"epoch"` // the epoch the follower believes the leader has
	HighWatermark      int64  `msgpack:"hw"`    // the follower's HW (informational)
	// LogStart is the follower's log start offset, which its leader's
	// DeleteRecords waits on; nil from older nodes.
	LogStart *int64 `msgpack:"lso,omitempty"`
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
//
// Members carries, for the followers in NewISR, the incarnation of the
// broker process whose fetches the leader judged in sync (KIP-903's broker
// epochs). The controller adds a replica to the ISR only if Members names
// its currently registered incarnation: a follower that restarted with a
// shorter log (fsync interval or never) must not re-enter on the strength
// of its previous process's fetches. A missing entry (or 0) is unknown and
// refused like a stale one: every peer sends the field, and a refused
// expansion only waits for the follower's next fetch.
//
// TopicID names the topic incarnation whose replica the leader judged: a
// topic deleted and re-created under the same name starts again at epochs
// 0, so without it a change judged on the old topic's followers could be
// committed to the new one's ISR.
type AlterPartitionRequest struct {
	BrokerID       int32       `msgpack:"broker"`
	Incarnation    int64       `msgpack:"inc"`
	Topic          string      `msgpack:"t"`
	TopicID        string      `msgpack:"tid"`
	Partition      int32       `msgpack:"p"`
	LeaderEpoch    int32       `msgpack:"epoch"`
	PartitionEpoch int32       `msgpack:"pepoch"`
	NewISR         []int32     `msgpack:"isr"`
	Members        []ISRMember `msgpack:"members"`
}

// ISRMember is a replica with the incarnation of its broker process (0 =
// unknown).
type ISRMember struct {
	BrokerID    int32 `msgpack:"broker"`
	Incarnation int64 `msgpack:"inc"`
}

// MemberIncarnation returns the incarnation Members gives broker id, 0 if none.
func (r *AlterPartitionRequest) MemberIncarnation(id int32) int64 {
	for _, m := range r.Members {
		if m.BrokerID == id {
			return m.Incarnation
		}
	}
	return 0
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
	// NewStorage says that the node's data directory held none of an
	// earlier process's data at this start (wiped, replaced, or its first
	// start): the controller takes it out of the ISRs its earlier
	// incarnations left it in. Omitted when false (older builds).
	NewStorage bool `msgpack:"new,omitempty"`
	// UnsyncedLogs says that the node runs with --fsync interval or never:
	// a restart may have cut its logs below what it fetched, so it is no
	// longer an eligible leader replica (KIP-966). Omitted when false.
	UnsyncedLogs bool `msgpack:"unsynced,omitempty"`
	// EmptyReplicas lists the partitions the node's metadata image assigns
	// to it whose logs hold nothing from before this start (their
	// directory missing, holding another topic's data, or marked as created
	// empty by a process not yet registered): for these partitions the
	// controller treats it as NewStorage. Omitted when empty.
	EmptyReplicas []PartitionRef `msgpack:"empty,omitempty"`
	// TornReplicas lists the partitions whose logs this start found with a
	// damaged tail and truncated (a write cut by a crash, or data damaged
	// on disk, which under --fsync always may have been acknowledged): for
	// these the controller treats it as UnsyncedLogs, so it leaves their
	// ELRs. Omitted when empty.
	TornReplicas []PartitionRef `msgpack:"torn,omitempty"`
	// MetadataVersion is the highest metadata version this node's build
	// applies (metadata.MetadataVersion); absent (0) from builds before
	// versions existed, which apply version 1.
	MetadataVersion int32 `msgpack:"mv,omitempty"`
	// Rack is the failure domain the node runs in (--rack: a rack, a
	// zone): the controller places a partition's replicas in different
	// racks where it can. Omitted when not set (and by older builds).
	Rack string `msgpack:"rack,omitempty"`
}

// PartitionRef names one partition of a topic by the topic's id.
type PartitionRef struct {
	TopicID   string `msgpack:"tid"`
	Partition int32  `msgpack:"p"`
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
	// Seq numbers this incarnation's heartbeats from 1 (0: not numbered);
	// AckedSeq is the highest Seq whose answer reached the broker (0: none
	// yet). A broker that can send but not receive keeps reaching the
	// controller while its AckedSeq stands still: the controller tells by
	// that that its answers are lost (see controller sessions).
	Seq      int64 `msgpack:"seq"`
	AckedSeq int64 `msgpack:"acked"`
	// MetadataLeader is the metadata log's (raft) leader as the broker's
	// raft knows it, 0 for none; nil from a build that does not say. A
	// broker that names another, or none, does not receive the active
	// controller's log, nor the records that would make it leader or fence
	// it: the controller gives it no leadership meanwhile (preferred or on
	// a fence) and fences it after 1.5 session timeouts of that.
	MetadataLeader *int32 `msgpack:"mlead,omitempty"`
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

// DescribeReplicaRequest asks a node for its local replica state (`topic
// describe --replicas`, tests, checkers).
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
	// Size is the bytes of the replica's segment files (what it holds on
	// disk, Kafka's log-dirs size) and Segments how many there are; both
	// for `topic describe --replicas`, omitted by older nodes.
	Size     int64 `msgpack:"size,omitempty"`
	Segments int   `msgpack:"segs,omitempty"`
}

// DescribeQuorumRequest asks a node for its view of the controller quorum
// (`paymentlog cluster quorum` asks every node): a fresh controller-eligible
// node asks the other listed controllers before
// bootstrapping, to refuse joining a cluster whose voters do not include it
// (controller membership changes are not supported), and, once started
// vote-guarded, until enough of them have told it how far their logs go. Read-only, like
// DescribeReplica: what it reveals, DescribeCluster tells a client too.
type DescribeQuorumRequest struct{}
type DescribeQuorumResponse struct {
	Err ErrorCode `msgpack:"err"`
	// Voters are the raft voters in the node's applied configuration (the
	// controllers the cluster was created with); empty before any is applied.
	Voters []int32 `msgpack:"voters"`
	// Controllers is the node's --controllers flag, id@addr,... in id order.
	Controllers string `msgpack:"ctrls"`
	// Learners are the raft learners (broker-only nodes, Kafka's observers)
	// in the node's applied configuration; Applied is the last metadata log
	// index the node applied to its image. Both for `cluster quorum`;
	// omitted by older nodes.
	Learners []int32 `msgpack:"learners,omitempty"`
	Applied  uint64  `msgpack:"applied,omitempty"`
	Term     uint64  `msgpack:"term"`
	Commit   uint64  `msgpack:"commit"`
	// LastIndex is the last index of the node's metadata log on disk; a
	// controller that starts with an empty log must catch up to the highest
	// its peers report before it votes (node/rejoin.go). Commit is not
	// enough: it is persisted lazily and may lag.
	LastIndex uint64 `msgpack:"last"`
	// Guarded: the node itself started with an empty log and has not caught
	// up yet, so its log may lack committed entries; its answer does not
	// count towards another node's catch-up target.
	Guarded bool `msgpack:"guarded"`
	// GuardNonce is, while Guarded, the nonce in the node's rejoin-guard
	// marker (32 lowercase hex characters; "" from an older build or an
	// older marker): it names the guarded metadata log (raftnode.LiftGuard).
	GuardNonce string `msgpack:"nonce,omitempty"`
	// Witnessed are the first-start witnesses, id -> GuardNonce, sent only
	// when not Guarded: a node that lifted its own guard as a cluster's
	// first start lists the guarded controllers whose answers made that
	// first start and whose nonces it saw before every other answer it
	// counted (no leader had been elected yet); every node whose guard
	// lifted also passes on those it read in the others' answers. A guarded
	// controller that finds its own id with its own nonce here votes at once
	// (node/rejoin_answers.go). Kept in memory only: empty after that node
	// restarts. Older nodes send and read neither field.
	Witnessed map[int32]string `msgpack:"witnessed"`
}
