package chaos

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"paymentlog/bench/localcluster"
	"paymentlog/segment"
)

// A rot (TornRot) is found by the damaged node's scrubber, which stops the
// node: that stop is the repair working, not a crash. Depending on the
// node (restartsInProcess), the process then exits, for the nemesis to
// start it again, or starts the node again itself and says so in its log
// (inProcessRestarts). The checker tells repairs and crashes apart from
// the history alone (scrubRepairs): a stop of either kind whose output
// says the scrub found a corrupt batch in partition P, of a node holding a
// rot of P not yet repaired, repairs that rot; every other stop of a node
// on its own is a crash (NodeCrashed).

// Rot is a sealed segment a rot-sealed torn tail damaged.
type Rot struct {
	Node      int32
	Partition int32
	Fault     int       // Fault.N
	At        time.Time // when the bytes were flipped (the node was down)
	Offset    int64     // base offset of the damaged batch
}

// NodeExit is a node that stopped without being killed: its process
// exited, or (InProcess) it started the node again itself.
type NodeExit struct {
	Node   int32
	At     time.Time
	Detail string // how it stopped, and its log
	// InProcess: the process did not exit; it logged that it starts the
	// node again in the process (--log-scrub-restart), at At.
	InProcess bool
	// ScrubPartition is the partition whose log, as the node's output
	// says, its scrub found a corrupt batch in (segment.ErrScrubCorrupt);
	// -1 when the output says no such thing.
	ScrubPartition int32
}

// crashOutputTail is how much of a crashed incarnation's output is read
// for the scrub's error (it is among the last lines: the node stops at once).
const crashOutputTail = 64 << 10

// nodeExit describes a crash of a node of the chaos topic's cluster
// (start: the run's t+0).
func nodeExit(cr localcluster.Crash, topic string, start time.Time) NodeExit {
	e := NodeExit{Node: cr.ID, At: cr.At, ScrubPartition: -1,
		Detail: fmt.Sprintf("node %d (pid %d) exited on its own at t+%v: %v (log %s)", cr.ID, cr.PID, cr.At.Sub(start).Round(time.Millisecond), cr.Err, cr.LogPath)}
	out, err := cr.Output(crashOutputTail)
	if err != nil {
		e.Detail += fmt.Sprintf(" (its output could not be read: %v)", err)
		return e
	}
	e.ScrubPartition = scrubPartition(out, topic)
	return e
}

// scrubPartition is the partition of topic whose corrupt batch a node's
// output reports its scrub found (the last line that quotes
// segment.ErrScrubCorrupt and names a partition directory, topic-N, the
// last one it names), or -1.
func scrubPartition(out []byte, topic string) int32 {
	re := regexp.MustCompile(`(?:^|[^\w.-])` + regexp.QuoteMeta(topic) + `-(\d+)\b`)
	msg := []byte(segment.ErrScrubCorrupt.Error())
	p := int32(-1)
	for line := range bytes.Lines(out) {
		if !bytes.Contains(line, msg) {
			continue
		}
		if m := re.FindAllSubmatch(line, -1); m != nil {
			if n, err := strconv.ParseInt(string(m[len(m)-1][1]), 10, 32); err == nil {
				p = int32(n)
			}
		}
	}
	return p
}

// scrubRepairs matches exits with rots, in time order: an exit, or a
// restart in the node's process, whose output says the scrub found a
// corrupt batch in partition P (NodeExit.ScrubPartition) repairs the
// earliest rot of P on that node applied before it and not repaired yet.
// It returns, for each rot, the index of the exit that repaired it (-1:
// none), and the indexes of the other exits: crashes.
func scrubRepairs(rots []Rot, exits []NodeExit) (repairedBy []int, crashes []int) {
	repairedBy = make([]int, len(rots))
	for i := range repairedBy {
		repairedBy[i] = -1
	}
	order := make([]int, len(exits))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return exits[a].At.Compare(exits[b].At) })
	for _, ei := range order {
		e := exits[ei]
		found := -1
		for ri, r := range rots {
			if repairedBy[ri] < 0 && e.ScrubPartition >= 0 && r.Node == e.Node && r.Partition == e.ScrubPartition && !r.At.After(e.At) {
				found = ri
				break
			}
		}
		if found < 0 {
			crashes = append(crashes, ei)
			continue
		}
		repairedBy[found] = ei
	}
	return repairedBy, crashes
}
