package chaos

import (
	"bytes"
	"fmt"
	"regexp"
	"time"
)

// A node whose scrub finds a corrupt batch stops, and by default (`node
// start --log-scrub-restart`) starts again in the same process, which
// truncates the partition at the batch (cli/node_restart.go). A chaos run
// exercises both ways a rot's repair can go, on every run and every
// cluster size: the even node ids keep that default and restart in their
// process; the odd ones run with --log-scrub-restart=false and exit, for
// the nemesis to start them again (the way of a node under a supervisor).
// Fixed by the id rather than drawn from the seed, so that every run has
// nodes of both kinds and a node's log says which it is by its name alone.
//
// A restart in the process is read from the node's log (the process logs
// inProcessMarker, with the scrub's error, before it starts the node
// again) and recorded as a NodeExit with InProcess set: it repairs a rot,
// or is a crash, by the same matching as an exit (scrubRepairs); the
// nemesis does not start such a node (it runs).

// inProcessMarker is in the line a node logs (at WARN, with an err
// attribute quoting the scrub's error) when it starts again in its process
// after its scrub found a corrupt batch (cli/node_restart.go).
const inProcessMarker = "starting the node again in this process"

// restartsInProcess reports whether node id of a chaos run starts again in
// its process after its scrub finds a corrupt batch; otherwise it exits.
func restartsInProcess(id int32) bool { return id%2 == 0 }

// scrubRestartArgs is node id's --log-scrub-restart flag (explicit both
// ways, so that the run does not depend on the flag's default).
func scrubRestartArgs(id int32) []string {
	return []string{fmt.Sprintf("--log-scrub-restart=%v", restartsInProcess(id))}
}

// scrubRestartModes splits the ids of a cluster of n nodes into those that
// restart in their process and those that exit.
func scrubRestartModes(n int) (inProcess, exit []int32) {
	for id := int32(1); id <= int32(n); id++ {
		if restartsInProcess(id) {
			inProcess = append(inProcess, id)
		} else {
			exit = append(exit, id)
		}
	}
	return inProcess, exit
}

// scrubRestartLine describes which nodes of a cluster of n restart in
// their process ("" for none).
func scrubRestartLine(n int) string {
	if n <= 0 {
		return ""
	}
	in, ex := scrubRestartModes(n)
	return fmt.Sprintf("a scrub that finds a corrupt batch stops the node: nodes %v start again in their process (--log-scrub-restart), nodes %v exit and the nemesis starts them again", in, ex)
}

// logTime is the time attribute of a log/slog text line.
var logTime = regexp.MustCompile(`(?:^|\s)time=(\S+)`)

// inProcessRestarts finds node's restarts in its process in lines of its
// log (whole lines; logPath for the report): one NodeExit each, InProcess,
// At the line's time (seen when it has none), ScrubPartition the partition
// of topic the quoted scrub error names (scrubPartition) or -1.
func inProcessRestarts(node int32, lines []byte, topic, logPath string, start, seen time.Time) []NodeExit {
	if !bytes.Contains(lines, []byte(inProcessMarker)) {
		return nil
	}
	var out []NodeExit
	for line := range bytes.Lines(lines) {
		if !bytes.Contains(line, []byte(inProcessMarker)) {
			continue
		}
		at, ok := lineTime(line)
		if !ok {
			at = seen
		}
		why := bytes.TrimSpace(line)
		if i := bytes.Index(why, []byte(" err=")); i >= 0 {
			why = why[i+1:]
		}
		out = append(out, NodeExit{Node: node, At: at, InProcess: true, ScrubPartition: scrubPartition(line, topic),
			Detail: fmt.Sprintf("node %d stopped and started again in its process at t+%v: %s (log %s)", node, at.Sub(start).Round(time.Millisecond), why, logPath)})
	}
	return out
}
