package chaos

import (
	"bytes"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// Port fences of live processes.
//
// The active controller fences a silent broker at once, before its session
// runs out, when its port is found closed: a probe, the controller's own
// traffic or its raft found the broker's host answering with ICMP port
// unreachable, so no process listens there (node/controller/probe.go). A
// stopped (SIGSTOP) or cut-off process keeps its socket, so it must never
// be fenced that way: that would cost its leaderships for nothing. A
// process fenced so and still alive shows it in its log: the next answer
// to its heartbeat says it is fenced, and it logs the change. A dead one
// logs nothing more, a process starting the node again in itself logs
// under a new incarnation, and one stopping on its own closes its socket
// before it could hear an answer. So a port fence of an incarnation that
// later logs `fence state changed ... fenced=true` fenced a live process.

// PortFence is a fence of a broker incarnation for its closed port, by the
// controller on node By at At, which that incarnation's process outlived:
// at Alive it logged a heartbeat answer saying it was fenced.
type PortFence struct {
	By          int32
	Broker      int32
	Incarnation int64
	At, Alive   time.Time
}

func (f PortFence) String() string {
	return fmt.Sprintf("node %d fenced broker %d (incarnation %d) for a closed port at %s; that process heard it was fenced %v later (it was alive)",
		f.By, f.Broker, f.Incarnation, f.At.Format(time.RFC3339Nano), f.Alive.Sub(f.At).Round(time.Millisecond))
}

var (
	portFenceLine = regexp.MustCompile(`msg="broker silent and its port found closed[^"]*".* broker=(\d+) incarnation=(\d+)`)
	startedLine   = regexp.MustCompile(`msg="node started".* incarnation=(\d+)`)
	fencedLine    = regexp.MustCompile(`msg="fence state changed".* fenced=true`)
)

// processMarker starts each process's output in a node's log
// (localcluster.Cluster.startNode).
var processMarker = []byte("### localcluster")

// livePortFences reads the nodes' logs (node id -> the whole log, every
// process it ran) and returns the port fences of processes that were alive
// (see above): the first of each incarnation's, in the order the logs list
// them.
func livePortFences(logs map[int32][]byte) []PortFence {
	type fence struct {
		by int32
		at time.Time
	}
	first := map[[2]int64]fence{} // broker, incarnation -> its first port fence
	fenced := map[[2]int64][]time.Time{}
	var order [][2]int64
	for _, id := range slices.Sorted(maps.Keys(logs)) {
		var inc int64 // the incarnation whose process is logging (0: not known yet)
		for line := range bytes.Lines(logs[id]) {
			if bytes.HasPrefix(line, processMarker) {
				inc = 0
				continue
			}
			at, ok := lineTime(line)
			if !ok {
				continue
			}
			if m := startedLine.FindSubmatch(line); m != nil {
				inc, _ = strconv.ParseInt(string(m[1]), 10, 64)
			}
			if inc != 0 && fencedLine.Match(line) {
				k := [2]int64{int64(id), inc}
				fenced[k] = append(fenced[k], at)
			}
			if m := portFenceLine.FindSubmatch(line); m != nil {
				b, _ := strconv.ParseInt(string(m[1]), 10, 32)
				i, _ := strconv.ParseInt(string(m[2]), 10, 64)
				if k := [2]int64{b, i}; first[k].at.IsZero() {
					order = append(order, k)
					first[k] = fence{id, at}
				}
			}
		}
	}
	var out []PortFence
	for _, k := range order {
		f := first[k]
		if i := slices.IndexFunc(fenced[k], func(t time.Time) bool { return t.After(f.at) }); i >= 0 {
			out = append(out, PortFence{By: f.by, Broker: int32(k[0]), Incarnation: k[1], At: f.at, Alive: fenced[k][i]})
		}
	}
	return out
}

// lineTime is a log line's time.
func lineTime(line []byte) (time.Time, bool) {
	m := logTime.FindSubmatch(line)
	if m == nil {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(m[1]))
	return t, err == nil
}
