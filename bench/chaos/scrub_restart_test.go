package chaos

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/bench/localcluster"
	"paymentlog/segment"
)

// inProcessOutput is a node's output around a restart in its process
// (copied from a chaos run's node log: seed 105, node 2, fault #33).
const inProcessOutput = `time=2026-12-03T14:53:20.383Z level=ERROR msg="partition log failed: stopping the node so its partitions move to in-sync replicas" node=2 partition_dir=chaos-2 err="segment: log failed after an I/O error; reopen to recover: segment: scrub found a corrupt batch: segment: corruption in /tmp/paymentlog-cluster-855578506/node2/data/chaos-2/00000000000000000000.log at byte 586934 (expected offset 4847): segment: corrupt batch: crc mismatch: stored 18f5edbb, computed 1b10cefa"
time=2026-12-03T14:53:20.383Z level=INFO msg="shutting down" node=2
time=2026-12-03T14:53:20.396Z level=WARN msg="the scrub found a corrupt batch: starting the node again in this process, to truncate the partition there, set aside what follows and fetch it again from its leader" node=2 err="node: partition log chaos-2 failed: segment: log failed after an I/O error; reopen to recover: segment: scrub found a corrupt batch: segment: corruption in /tmp/paymentlog-cluster-855578506/node2/data/chaos-2/00000000000000000000.log at byte 586934 (expected offset 4847): segment: corrupt batch: crc mismatch: stored 18f5edbb, computed 1b10cefa"
time=2026-12-03T14:53:20.400Z level=INFO msg="node started" node=2 addr=10.241.195.2:7100 controller_eligible=true incarnation=1796309600397043241 data_dir=/tmp/paymentlog-cluster-855578506/node2/data metrics_addr="" authorizer="none (every client certificate may do everything)"
`

func TestInProcessRestarts(t *testing.T) {
	start := time.Date(2026, 12, 3, 14, 52, 0, 0, time.UTC)
	seen := start.Add(time.Hour)
	got := inProcessRestarts(2, []byte(inProcessOutput), "chaos", "/tmp/node2.log", start, seen)
	if len(got) != 1 {
		t.Fatalf("%d restarts: %+v", len(got), got)
	}
	e := got[0]
	want := time.Date(2026, 12, 3, 14, 53, 20, 396e6, time.UTC)
	if e.Node != 2 || !e.InProcess || e.ScrubPartition != 2 || !e.At.Equal(want) {
		t.Fatalf("got %+v; want node 2, in process, partition 2, at %v", e, want)
	}
	if !strings.Contains(e.Detail, "started again in its process at t+1m20.396s") || !strings.Contains(e.Detail, `err="node: partition log chaos-2 failed`) || !strings.Contains(e.Detail, "/tmp/node2.log") {
		t.Fatalf("detail %q", e.Detail)
	}
	if !strings.Contains(inProcessOutput, segment.ErrScrubCorrupt.Error()) {
		t.Fatal("the sample output does not quote segment.ErrScrubCorrupt")
	}
	// Without a time attribute: when it was seen. Naming another topic's
	// partition: -1 (not a repair of a chaos rot).
	line := strings.ReplaceAll(strings.Split(inProcessOutput, "\n")[2], "time=2026-12-03T14:53:20.396Z ", "")
	line = strings.ReplaceAll(line, "chaos-2", "other-2")
	got = inProcessRestarts(2, []byte(line+"\n"), "chaos", "", start, seen)
	if len(got) != 1 || !got[0].At.Equal(seen) || got[0].ScrubPartition != -1 {
		t.Fatalf("got %+v", got)
	}
	// The other lines of a scrub's find are no restart in the process.
	other := strings.ReplaceAll(inProcessOutput, inProcessMarker, "exiting")
	if got := inProcessRestarts(2, []byte(other), "chaos", "", start, seen); got != nil {
		t.Fatalf("no restart in the process read as %+v", got)
	}
}

// TestScrubRestartModes: every cluster size from 3 has nodes of both kinds.
func TestScrubRestartModes(t *testing.T) {
	for n := 3; n <= MaxNodes; n++ {
		in, ex := scrubRestartModes(n)
		if len(in) == 0 || len(ex) == 0 || len(in)+len(ex) != n {
			t.Fatalf("%d nodes: in process %v, exit %v", n, in, ex)
		}
		for _, id := range in {
			if !slices.Equal(scrubRestartArgs(id), []string{"--log-scrub-restart=true"}) {
				t.Fatalf("node %d: %v", id, scrubRestartArgs(id))
			}
		}
		for _, id := range ex {
			if !slices.Equal(scrubRestartArgs(id), []string{"--log-scrub-restart=false"}) {
				t.Fatalf("node %d: %v", id, scrubRestartArgs(id))
			}
		}
	}
	var b strings.Builder
	(&Result{Plan: Plan{Nodes: 3}}).WriteSummary(&b)
	if !strings.Contains(b.String(), "nodes [2] start again in their process (--log-scrub-restart), nodes [1 3] exit") {
		t.Fatalf("the summary does not say which nodes restart in their process:\n%s", b.String())
	}
}

// TestCheckScrubRepairsInProcess: a restart in the node's process repairs
// a rot as an exit does (and readiness, which asks scrubRepairs, waits for
// either); one that matches no rot is node-crashed, as an exit is.
func TestCheckScrubRepairsInProcess(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	rots := []Rot{{Node: 2, Partition: 1, Fault: 4, At: at(10)}, {Node: 3, Partition: 0, Fault: 9, At: at(30)}}
	for _, tc := range []struct {
		name      string
		exits     []NodeExit
		repairs   int
		inProcess int
		crashers  []int32
		lines     []string // in the report
	}{
		{"one in process, one by an exit", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 1, InProcess: true}, {Node: 3, At: at(33), ScrubPartition: 0}}, 2, 1, nil,
			[]string{"scrub repairs: 2 of 2 rots, 1 restarted in the node's process and 1 by an exit",
				"fault #4: node 2 partition 1 (batch at offset 0): restarted in its process at t+12s",
				"fault #9: node 3 partition 0 (batch at offset 0): exited at t+33s, started again by the nemesis"}},
		{"both in process", []NodeExit{{Node: 3, At: at(33), ScrubPartition: 0, InProcess: true}, {Node: 2, At: at(12), ScrubPartition: 1, InProcess: true}}, 2, 2, nil,
			[]string{"scrub repairs: 2 of 2 rots, 2 restarted in the node's process and 0 by an exit"}},
		{"in process, partition of no rot", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 0, InProcess: true}}, 0, 0, []int32{2},
			[]string{"scrub repairs: 0 of 2 rots", "fault #4: node 2 partition 1 (batch at offset 0): never found"}},
		{"in process, node without a rot", []NodeExit{{Node: 1, At: at(12), ScrubPartition: 1, InProcess: true}}, 0, 0, []int32{1}, nil},
		{"in process, before the rot", []NodeExit{{Node: 3, At: at(20), ScrubPartition: 0, InProcess: true}}, 0, 0, []int32{3}, nil},
		{"in process, no scrub error quoted", []NodeExit{{Node: 2, At: at(12), ScrubPartition: -1, InProcess: true}}, 0, 0, []int32{2}, nil},
		// Past its restart budget the process exits at the next find:
		// that exit repairs the second rot; a second stop for the first
		// is a crash, whichever its kind.
		{"in process, then an exit for the same rot", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 1, InProcess: true}, {Node: 2, At: at(13), ScrubPartition: 1}}, 1, 1, []int32{2}, nil},
		{"an exit, then in process for the same rot", []NodeExit{{Node: 2, At: at(12), ScrubPartition: 1}, {Node: 2, At: at(13), ScrubPartition: 1, InProcess: true}}, 1, 0, []int32{2}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			h.Rots = rots
			for i := range tc.exits {
				tc.exits[i].Detail = fmt.Sprintf("stop %d", i)
			}
			h.Exits = tc.exits
			r := Check(h)
			if r.Rots != 2 || r.ScrubRepairs != tc.repairs || r.InProcessRepairs != tc.inProcess || r.Count(NodeCrashed) != len(tc.crashers) {
				t.Fatalf("rots %d repairs %d in process %d node-crashed %d; want 2, %d, %d, %d (%v)", r.Rots, r.ScrubRepairs, r.InProcessRepairs, r.Count(NodeCrashed), tc.repairs, tc.inProcess, len(tc.crashers), r.Anomalies)
			}
			checkCrashers(t, r, tc.crashers)
			var b strings.Builder
			r.WriteText(&b)
			for _, l := range tc.lines {
				if !strings.Contains(b.String(), l) {
					t.Fatalf("report does not say %q:\n%s", l, b.String())
				}
			}
		})
	}
}

// fakeNodeScript is a stand-in for the paymentlog binary (run as
// `node start ... --id N ...`): node 2 logs a restart in its process after
// its scrub found a corrupt batch in chaos-2 and runs on; node 1 logs its
// scrub's find in chaos-0 and exits, at its first start only; node 3 just
// runs.
func fakeNodeScript(t *testing.T) string {
	t.Helper()
	warn := strings.Split(inProcessOutput, "\n")[2]
	warn = strings.Replace(warn, "time=2026-12-03T14:53:20.396Z", "time=$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)", 1)
	dir := t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
id=""; prev=""
for a in "$@"; do [ "$prev" = "--id" ] && id="$a"; prev="$a"; done
case "$id" in
2) echo "%s"; exec sleep 600 ;;
1) [ -e %s/exited ] && exec sleep 600
   touch %s/exited
   echo 'paymentlog: node: partition log chaos-0 failed: %s: segment: corruption in /x/node1/data/chaos-0/00000000000000000000.log'
   exit 1 ;;
*) exec sleep 600 ;;
esac
`, strings.ReplaceAll(warn, `"`, `\"`), dir, dir, segment.ErrScrubCorrupt)
	path := filepath.Join(dir, "paymentlog")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNemesisNotesRestartsInProcess: the nemesis reads a restart in its
// process from the node's log, counts it as the repair of the node's rot
// (so readiness stops waiting), says so in the schedule, and leaves the
// node alone (same process, not started again), while a node that exited
// at its scrub's find is started again; each stop is noted once.
func TestNemesisNotesRestartsInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Binary: fakeNodeScript(t), Nodes: 3, Insecure: true, NoWait: true, BaseDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pid2 := c.Node(2).PID
	var out bytes.Buffer
	past := time.Now().Add(-time.Minute)
	nem := &Nemesis{C: c, Topic: "chaos", Partitions: 3, Start: past, Out: &out}
	nem.rots = []Rot{{Node: 2, Partition: 2, Fault: 4, At: past, Offset: 3752}, {Node: 1, Partition: 0, Fault: 7, At: past, Offset: 10}}
	if err := localcluster.Poll(ctx, 20*time.Millisecond, func(ctx context.Context) (bool, error) {
		nem.restartCrashed(ctx)
		if rot := nem.unrepairedRot(); rot != "" {
			return false, fmt.Errorf("%s", rot)
		}
		return c.Node(1).Starts == 2 && c.Node(1).Running, nil
	}); err != nil {
		t.Fatalf("%v; schedule:\n%s", err, out.String())
	}
	nem.restartCrashed(ctx)
	if n := c.Node(2); n.PID != pid2 || n.Starts != 1 || !n.Running {
		t.Fatalf("node 2: pid %d (was %d), %d starts, running %v: the nemesis touched a node that runs again in its process", n.PID, pid2, n.Starts, n.Running)
	}
	s := out.String()
	for _, want := range []string{
		"SCRUB REPAIR node 2 restarted in its process at t+",
		"its scrub found the rot of partition 2 (fault #4, batch at offset 3752)",
		"SCRUB REPAIR node 1 stopped: its scrub found the rot of partition 0 (fault #7, batch at offset 10); restarting it",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the schedule does not say %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "CRASH") {
		t.Errorf("a repair reported as a crash:\n%s", s)
	}
	exits := nem.Exits()
	if len(exits) != 2 {
		t.Fatalf("%d stops noted, want 2: %+v", len(exits), exits)
	}
	h := cleanHistory()
	h.Exits, h.Rots = exits, nem.Rots()
	if r := Check(h); !r.OK() || r.ScrubRepairs != 2 || r.InProcessRepairs != 1 {
		t.Fatalf("repairs %d (in process %d), anomalies %v", r.ScrubRepairs, r.InProcessRepairs, r.Anomalies)
	}
}
