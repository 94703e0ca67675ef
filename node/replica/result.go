package replica

// Code is the outcome of a request decided by the state machine. The broker
// maps it to a wire error code.
type Code uint8

const (
	OK                 Code = iota
	NotLeader               // this replica is not (or no longer) the leader
	FencedLeaderEpoch       // the request carries an older leader epoch than ours
	UnknownLeaderEpoch      // the request carries a newer leader epoch than ours
	NotEnoughReplicas       // the committed ISR is smaller than the minimum ISR
	Timeout                 // the HW did not pass the request before its deadline
	OffsetOutOfRange        // a fetch offset outside [logStart, leo]
	NotReplica              // a follower fetch from a broker not in the replica set
	StaleIncarnation        // a follower fetch from a process older than one that fetched already
	// NotEnoughReplicasAfterAppend: a parked produce whose batch was
	// appended, and then the ISR the HW counts fell below the minimum ISR,
	// so the HW cannot reach it until the ISR recovers. Its outcome is
	// unknown: the batch stays in the log and is committed if the ISR
	// recovers in time.
	NotEnoughReplicasAfterAppend
)

var codeNames = [...]string{"OK", "NotLeader", "FencedLeaderEpoch", "UnknownLeaderEpoch",
	"NotEnoughReplicas", "Timeout", "OffsetOutOfRange", "NotReplica", "StaleIncarnation",
	"NotEnoughReplicasAfterAppend"}

func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Code(?)"
}

// Completion completes one parked produce request.
type Completion struct {
	ReqID uint64
	Code  Code
}

// Decisions is what the caller must carry out after an event.
type Decisions struct {
	// HW is the high watermark after the event; HWChanged says it moved.
	HW        int64
	HWChanged bool
	// Complete lists parked produce requests that are now finished.
	Complete []Completion
	// ProposeISR, when non-nil, is an ISR change to send to the controller
	// (AlterPartition at the replica's LeaderEpoch and PartitionEpoch).
	ProposeISR []int32
	// WakeFetchers says followers or consumers waiting on this partition
	// should re-check (new data or a new HW).
	WakeFetchers bool
}

func (d *Decisions) merge(o Decisions) {
	if o.HWChanged {
		d.HW, d.HWChanged = o.HW, true
	}
	d.Complete = append(d.Complete, o.Complete...)
	if o.ProposeISR != nil {
		d.ProposeISR = o.ProposeISR
	}
	d.WakeFetchers = d.WakeFetchers || o.WakeFetchers
}
