package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strconv"

	"paymentlog/bench/localcluster"
)

// Why the cluster changed during a throughput run.
//
// The run's cluster changes (ISR shrinks, fencings) must be 0 without
// faults, and when one happens a rerun seldom shows it again (the
// fifty-fourth session saw one ISR shrink in ~40 full-load runs, and the
// bench had removed its cluster and the logs with it). With a local
// cluster the bench reads what the nodes logged during the run and keeps
// the lines that say why: a leader's "shrinking ISR: follower out of sync"
// (the follower, how far behind, when it last caught up and last fetched)
// and the controller's fencing lines. They are reported under the cluster
// changes and beside the missed target (JSON
// throughput.cluster_change_reasons).

// maxChangeReasons bounds the reasons a run keeps; the rest are counted.
const maxChangeReasons = 5

// logMarks marks the local nodes' logs (nil with --bootstrap).
func (r *runner) logMarks() localcluster.LogMarks {
	if lt, ok := r.target.(*localTarget); ok {
		return lt.c.LogMarks()
	}
	return nil
}

// changeReasonsSince reads what the local nodes logged after marks and
// returns the reasons they gave for cluster changes (none with
// --bootstrap).
func (r *runner) changeReasonsSince(marks localcluster.LogMarks) ([]string, int) {
	lt, ok := r.target.(*localTarget)
	if !ok || marks == nil {
		return nil, 0
	}
	logs := map[int32][]byte{}
	for id, off := range marks {
		b, _, err := lt.c.LogSince(id, off)
		if err != nil {
			r.log.Warn("could not read a node's log for the cluster changes' reasons", "node", id, "err", err)
			continue
		}
		logs[id] = b
	}
	return changeReasons(logs)
}

// changeReasons returns, for the log lines of each node (id -> lines, as
// written since the run began), the reasons for ISR shrinks and fencings,
// oldest first within a node and nodes in id order, at most
// maxChangeReasons of them, and how many more there were.
func changeReasons(logs map[int32][]byte) (reasons []string, more int) {
	ids := make([]int32, 0, len(logs))
	for id := range logs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		sc := bufio.NewScanner(bytes.NewReader(logs[id]))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		add := func(r string) {
			switch {
			case r == "":
			case len(reasons) < maxChangeReasons:
				reasons = append(reasons, r)
			default:
				more++
			}
		}
		for sc.Scan() {
			add(changeReason(id, sc.Bytes()))
		}
		if err := sc.Err(); err != nil { // a line over 1 MiB: the rest is unread
			add(fmt.Sprintf("node %d: its log was not read to the end: %v", id, err))
		}
	}
	return reasons, more
}

// changeReason describes one log line of node id that explains a cluster
// change ("" for any other line).
func changeReason(id int32, line []byte) string {
	if !bytes.Contains(line, []byte("msg=")) {
		return ""
	}
	f := logFields(line)
	msg := f["msg"]
	switch {
	case msg == "shrinking ISR: follower out of sync":
		return fmt.Sprintf("node %d, leading %s-%s, left follower %s out of the ISR: %s records behind, last caught up %s ago, last fetch %s ago (lag time %s)",
			id, f["topic"], f["partition"], f["follower"], f["behind"], f["caught_up_ago"], f["fetched_ago"], f["lag_time"])
	case f["level"] == "WARN" && bytes.Contains([]byte(msg), []byte("fencing")) && f["broker"] != "":
		s := fmt.Sprintf("node %d, the controller, fenced broker %s: %s", id, f["broker"], msg)
		if o := f["overdue"]; o != "" {
			s += " (the check ran " + o + " late)"
		}
		return s
	}
	return ""
}

// logFields parses a log/slog text line (key=value, values with spaces
// quoted as Go strings) into its fields; a malformed rest is dropped.
func logFields(line []byte) map[string]string {
	f := map[string]string{}
	for len(line) > 0 {
		line = bytes.TrimLeft(line, " ")
		eq := bytes.IndexByte(line, '=')
		if eq <= 0 {
			break
		}
		key := string(line[:eq])
		line = line[eq+1:]
		var val string
		if len(line) > 0 && line[0] == '"' {
			end := quotedEnd(line)
			if end < 0 {
				break
			}
			v, err := strconv.Unquote(string(line[:end]))
			if err != nil {
				break
			}
			val, line = v, line[end:]
		} else {
			sp := bytes.IndexByte(line, ' ')
			if sp < 0 {
				sp = len(line)
			}
			val, line = string(line[:sp]), line[sp:]
		}
		f[key] = val
	}
	return f
}

// quotedEnd returns the length of the Go string literal q starts with, or
// -1 when it is not closed.
func quotedEnd(q []byte) int {
	for i := 1; i < len(q); i++ {
		switch q[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}
