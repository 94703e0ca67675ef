package chaos

import "time"

// Outcome is what a producer was told about one record.
type Outcome uint8

const (
	Pending       Outcome = iota // never resolved (the run ended first)
	Acked                        // acknowledged (acks=all) at Write.Offset
	Failed                       // failed; the client says it was certainly not written
	Indeterminate                // failed, but it may have been written
)

func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	case Indeterminate:
		return "indeterminate"
	}
	return "pending"
}

// Write is one record a producer sent and what became of it.
type Write struct {
	ID        RecordID
	Partition int32
	Sent      time.Time // when Produce was called
	Done      time.Time // when the outcome arrived; zero while Pending
	Outcome   Outcome
	Offset    int64  // Acked only
	Err       string // Failed and Indeterminate only
	// Key is the record's key ("": none; compacted runs only) and
	// Tombstone whether its value was null (named by its HeaderID header).
	Key       string
	Tombstone bool
}

// Read is one record a consumer received.
type Read struct {
	Consumer  int
	Partition int32
	Offset    int64
	Value     string // see LogRecord.Value
	At        time.Time
	Key       string // "": none
	Tombstone bool   // see LogRecord.Tombstone
}

// Divergence is a consumer told by a leader that its log no longer holds
// the history the consumer read (client.LogTruncatedError, KIP-320): the
// records the consumer returned from DivergingEndOffset on are not all in
// the leader's log. Consumers only read below the HW, so in a chaos run
// this is a committed record that changed or vanished: a bug, never a
// consumer that is merely behind.
type Divergence struct {
	Consumer           int
	Partition          int32
	Position           int64 // the consumer's position (after the last record it read)
	LastFetchedEpoch   int32 // leader epoch of the last record it read
	DivergingEpoch     int32 // the leader's largest epoch <= LastFetchedEpoch (-1: none)
	DivergingEndOffset int64 // where the histories part, <= Position
	At                 time.Time
}

// Commit is one group commit of a consumer's positions (to its own group,
// GroupName) and what the consumer was told. A commit that failed may
// still have been applied.
type Commit struct {
	Consumer   int
	Offsets    map[int32]int64 // partition -> offset committed (the consumer's position)
	Sent, Done time.Time
	Acked      bool
	Err        string // when not Acked
}

// LogRecord is one record of a partition's log.
type LogRecord struct {
	Offset int64
	// Value is the record's value; for a Tombstone, which has none, the
	// value of its HeaderID header, which names it as a Payload would.
	Value string
	Epoch int32 // leader epoch of its batch
	// Key is the record's key ("": none; the workload writes keys only in
	// compacted runs) and Tombstone whether its value is null.
	Key       string
	Tombstone bool
}

// PartitionLog is a partition as read back through the cluster after the
// faults were healed: every record below the high watermark, from the leader.
// It is the checker's reference log.
type PartitionLog struct {
	Partition int32
	Start     int64 // log start offset (0 without retention)
	HW        int64 // high watermark when read
	Records   []LogRecord
	Err       string // why it could not be read (the checker reports the partition unverified)
}

// BatchInfo identifies a stored batch: replicas hold byte-identical batches,
// so equal BatchInfos below the HW mean equal bytes (the CRC covers the records).
type BatchInfo struct {
	Base, Last int64
	Epoch      int32
	CRC        uint32
	Size       int
	// Compacted: the log cleaner rewrote the batch (segment.AttrCompacted).
	// Replicas compact on their own, so such a batch's records, CRC and
	// size may differ from another replica's; its base, last offset and
	// epoch do not.
	Compacted bool
}

// ReplicaLog is one node's copy of a partition, read from its segment files
// after the cluster stopped.
type ReplicaLog struct {
	Node      int32
	Partition int32
	InISR     bool  // in the partition's final ISR
	HW, LEO   int64 // as the node reported them before it stopped; -1 unknown
	Batches   []BatchInfo
	Records   []LogRecord
	Err       string // corruption in a sealed segment, unreadable files
}

// History is everything a run observed; Check turns it into a Report.
type History struct {
	Start, End time.Time
	Partitions int
	// Consumers is how many consumers read every partition (numbered from
	// 0); each must have read up to every partition's final HW.
	Consumers int
	Writes    []Write
	Reads     []Read
	// Divergences lists every log truncation a consumer was told of (one per
	// consumer, partition and position). The consumer reads that partition
	// no further: it keeps its position, as the client leaves it.
	Divergences []Divergence
	Final       []PartitionLog
	Replicas    []ReplicaLog
	// Converged is false when, after healing, the replicas never all came
	// back in sync (ConvergeErr says how far they got).
	Converged   bool
	ConvergeErr string
	// Exits lists the nodes that stopped without being killed (their
	// process exited, or it started them again in it: NodeExit.InProcess),
	// and Rots the sealed segments rot-sealed torn tails damaged. A stop of
	// a node whose scrub found its rot repairs it (scrubRepairs); every
	// other stop is a crash, a bug.
	Exits []NodeExit
	Rots  []Rot
	// LivePortFences lists the fences of processes that were alive (paused,
	// cut off, slow) for a closed port (port_fences.go), read from the
	// nodes' logs after the run.
	LivePortFences []PortFence
	// FaultsApplied counts the faults the nemesis applied (kills, pauses,
	// partitions; a torn tail rides on a kill). 0: the run injected no
	// fault, so its history says nothing about faults.
	FaultsApplied int
	// Groups is set when the consumers committed their positions to
	// their groups (Commits) and the groups' offsets were read back after
	// the run (Committed: consumer -> partition -> offset; CommittedErr:
	// consumer -> why its group could not be read).
	Groups       bool
	Commits      []Commit
	Committed    map[int]map[int32]int64
	CommittedErr map[int]string
	// Members is how many consumers shared the partitions as members of
	// MembersGroup, and MemberReads what they read (checkMembers).
	Members     int
	MemberReads []MemberRead
	// MemberDivergences lists the log truncations members were told of
	// (Divergence.Consumer is the member): a member reads that partition
	// no further until it is handed over.
	MemberDivergences []Divergence
	MemberRejoins     int // times a member left and joined again
	MemberDeaths      int // of those, times it died instead of leaving
	// MemberStalls is how many times a member stopped polling for longer
	// than its max poll interval, and StallsLeft how many of those it
	// found its membership lost afterwards (it left the group).
	MemberStalls, StallsLeft int
	// Compacted: the topic was compacted (cleanup.policy=compact) and the
	// workload wrote keyed records and tombstones, so the final log may
	// lack records the cleaner removed (see checkCompacted).
	Compacted bool
	// FaultsEnd is when the last fault had been healed; the producers keep
	// writing for a while after it, and every partition must acknowledge
	// some of those writes (writes resumed). Zero: not recorded, not checked.
	FaultsEnd time.Time
}
