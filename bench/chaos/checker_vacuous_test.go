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

// TestCheckWritesMustResume: a partition that stopped taking writes for
// good leaves a consistent history (its records fail, the replicas agree)
// and passed every safety check. Records sent after the faults ended must
// be acknowledged in every partition, and producers that sent nothing then
// are no better.
func TestCheckWritesMustResume(t *testing.T) {
	h := cleanHistory()
	mid := h.Writes[len(h.Writes)/2].Sent
	h.FaultsEnd = mid
	if r := Check(h); !r.OK() {
		t.Fatalf("writes acknowledged after the faults: %v", r.Anomalies)
	}

	// Partition 2 takes no write after mid: its records there fail (and are
	// not in the log; nothing else changes, so the history is consistent).
	h = cleanHistory()
	h.FaultsEnd = mid
	failed := 0
	for i := range h.Writes {
		if w := &h.Writes[i]; w.Partition == 2 && !w.Sent.Before(mid) {
			w.Outcome, w.Offset, w.Err = Failed, -1, "not enough replicas"
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("fixture: no write failed")
	}
	trimFailed(h, 2)
	r := Check(h)
	if r.Count(WritesStalled) != 1 || r.SafetyViolations() != 0 {
		var b strings.Builder
		r.WriteText(&b)
		t.Fatalf("stalled partition: %d writes-stalled, %d safety:\n%s", r.Count(WritesStalled), r.SafetyViolations(), b.String())
	}
	if a := r.Anomalies[0]; a.Partition != 2 || !strings.Contains(a.Detail, "writes never resumed") {
		t.Fatalf("anomaly %v", a)
	}

	// Nothing sent after the faults at all.
	h = cleanHistory()
	h.FaultsEnd = h.End
	if r := Check(h); r.Count(WritesStalled) != 3 {
		t.Fatalf("nothing sent after the faults: %d writes-stalled", r.Count(WritesStalled))
	}
}

// trimFailed removes partition part's failed records from its final log,
// its replicas and the reads (they were never written), keeping offsets
// dense: the records after them are renumbered everywhere.
func trimFailed(h *History, part int32) {
	failed := map[string]bool{}
	for _, w := range h.Writes {
		if w.Partition == part && w.Outcome == Failed {
			failed[string(Payload(w.ID, 0))] = true
		}
	}
	keep := func(recs []LogRecord) []LogRecord {
		var out []LogRecord
		for _, r := range recs {
			if !failed[r.Value] {
				r.Offset = int64(len(out))
				out = append(out, r)
			}
		}
		return out
	}
	pl := &h.Final[part]
	pl.Records = keep(pl.Records)
	pl.HW = int64(len(pl.Records))
	eachReplica(h, part, func(rl *ReplicaLog) {
		rl.Records = keep(rl.Records)
		rl.HW, rl.LEO = pl.HW, pl.HW
		rl.Batches = nil
		for i := 0; i < len(rl.Records); i += 2 {
			rl.Batches = append(rl.Batches, BatchInfo{Base: int64(i), Last: int64(min(i+1, len(rl.Records)-1)), Epoch: 1, CRC: uint32(7000 + i), Size: 100})
		}
	})
	var reads []Read
	for _, rd := range h.Reads {
		if rd.Partition == part && failed[rd.Value] {
			continue
		}
		reads = append(reads, rd)
	}
	h.Reads = reads
	next := map[[2]int]int64{}
	for i := range h.Reads {
		if rd := &h.Reads[i]; rd.Partition == part {
			k := [2]int{rd.Consumer, int(part)}
			rd.Offset = next[k]
			next[k]++
		}
	}
}
