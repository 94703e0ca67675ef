package chaos

import (
	"strings"
	"testing"
)

// TestCheckNothingAcknowledgedIsUnverified: "0 lost writes" in a partition
// where no record was acknowledged checks nothing. A run whose producers
// never got an acknowledgement (a cluster that took no writes at all, or
// not in one partition) must not pass.
func TestCheckNothingAcknowledgedIsUnverified(t *testing.T) {
	// Partition 1's records all came back indeterminate (they may or may
	// not be in the log: they are, which is allowed).
	h := cleanHistory()
	for i := range h.Writes {
		if w := &h.Writes[i]; w.Partition == 1 {
			w.Outcome, w.Offset, w.Err = Indeterminate, -1, "timeout"
		}
	}
	r := Check(h)
	if r.Count(Unverified) != 1 || r.OK() {
		t.Fatalf("partition 1 without acknowledgements: %d unverified, OK %v: %v", r.Count(Unverified), r.OK(), r.Anomalies)
	}
	if a := r.Anomalies[0]; a.Partition != 1 || !strings.Contains(a.Detail, "no record was acknowledged") {
		t.Fatalf("anomaly %v", a)
	}

	// Nothing acknowledged anywhere, nothing in the log.
	h = cleanHistory()
	for i := range h.Writes {
		w := &h.Writes[i]
		w.Outcome, w.Offset, w.Err = Failed, -1, "not enough replicas"
	}
	noReads(h)
	for p := range h.Final {
		h.Final[p].Records, h.Final[p].HW = nil, 0
	}
	for i := range h.Replicas {
		h.Replicas[i].Records, h.Replicas[i].Batches = nil, nil
	}
	if r := Check(h); r.Count(Unverified) != 3 || r.OK() {
		t.Fatalf("nothing acknowledged: %d unverified, OK %v", r.Count(Unverified), r.OK())
	}

	// No partitions: nothing checked at all.
	if r := Check(&History{Converged: true}); r.OK() {
		t.Fatal("an empty history passes")
	}
}

// TestCheckNoFaultIsNotAPass: a run in which the nemesis applied no fault
// (every one skipped or failed, or a plan left with nothing to schedule)
// shows the system without faults only; its verdict must not be OK.
func TestCheckNoFaultIsNotAPass(t *testing.T) {
	h := cleanHistory()
	h.FaultsApplied = 0
	r := Check(h)
	if r.Count(NoFaults) != 1 || r.OK() {
		t.Fatalf("no fault applied: %d no-faults anomalies, OK %v", r.Count(NoFaults), r.OK())
	}
	var b strings.Builder
	r.WriteText(&b)
	if !strings.Contains(b.String(), "no-faults=1") || strings.Contains(b.String(), "verdict: OK") {
		t.Fatalf("report:\n%s", b.String())
	}
}
