package chaos

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// cleanHistory is a correct run: 2 producers × 30 records over 3 partitions
// (partition = seq % 3), every record acknowledged, read by two consumers,
// and stored by three in-sync replicas in batches of two records.
func cleanHistory() *History {
	t0 := time.Unix(1000, 0)
	h := &History{Start: t0, End: t0.Add(time.Minute), Partitions: 3, Consumers: 2, Converged: true, FaultsApplied: 5}
	logs := make([][]LogRecord, 3)
	tick := 0
	for seq := int64(0); seq < 30; seq++ {
		for p := 0; p < 2; p++ {
			id := RecordID{p, seq}
			part := int32(seq % 3)
			off := int64(len(logs[part]))
			tick++
			sent := t0.Add(time.Duration(tick) * 10 * time.Millisecond)
			h.Writes = append(h.Writes, Write{ID: id, Partition: part, Sent: sent, Done: sent.Add(5 * time.Millisecond), Outcome: Acked, Offset: off})
			logs[part] = append(logs[part], LogRecord{Offset: off, Value: string(Payload(id, 0)), Epoch: 1})
		}
	}
	for part := range logs {
		h.Final = append(h.Final, PartitionLog{Partition: int32(part), HW: int64(len(logs[part])), Records: logs[part]})
		for c := 0; c < 2; c++ {
			for _, rec := range logs[part] {
				h.Reads = append(h.Reads, Read{Consumer: c, Partition: int32(part), Offset: rec.Offset, Value: rec.Value})
			}
		}
		for node := int32(1); node <= 3; node++ {
			rl := ReplicaLog{Node: node, Partition: int32(part), InISR: true, HW: int64(len(logs[part])), LEO: int64(len(logs[part]))}
			rl.Records = append(rl.Records, logs[part]...)
			for i := 0; i < len(logs[part]); i += 2 {
				rl.Batches = append(rl.Batches, BatchInfo{Base: int64(i), Last: int64(i + 1), Epoch: 1, CRC: uint32(1000*part + i), Size: 100})
			}
			h.Replicas = append(h.Replicas, rl)
		}
	}
	return h
}

func (h *History) replica(node, part int32) *ReplicaLog {
	for i := range h.Replicas {
		if h.Replicas[i].Node == node && h.Replicas[i].Partition == part {
			return &h.Replicas[i]
		}
	}
	panic("no replica")
}

func (h *History) write(id RecordID) *Write {
	for i := range h.Writes {
		if h.Writes[i].ID == id {
			return &h.Writes[i]
		}
	}
	panic("no write")
}

func TestCheckClean(t *testing.T) {
	r := Check(cleanHistory())
	if !r.OK() {
		var b strings.Builder
		r.WriteText(&b)
		t.Fatalf("clean history reported anomalies:\n%s", b.String())
	}
	if r.Acked != 60 || r.Writes != 60 || r.Reads != 120 || r.FinalRecords != 60 || r.ReplicasChecked != 9 {
		t.Fatalf("counts: %+v", r)
	}
	if got := r.LongestUnavailability(); got != 5*time.Millisecond {
		t.Fatalf("longest unavailability %v, want 5ms", got)
	}
}

// appendFinal appends a record to partition part, on every replica and for
// every consumer too.
func appendFinal(h *History, part int32, value string) {
	pl := &h.Final[part]
	rec := LogRecord{Offset: pl.HW, Value: value, Epoch: 1}
	pl.Records = append(pl.Records, rec)
	pl.HW++
	for i := range h.Replicas {
		if rl := &h.Replicas[i]; rl.Partition == part {
			rl.Records = append(rl.Records, rec)
			rl.Batches = append(rl.Batches, BatchInfo{Base: rec.Offset, Last: rec.Offset, Epoch: 1, CRC: 77})
		}
	}
	for c := range h.Consumers {
		h.Reads = append(h.Reads, Read{Consumer: c, Partition: part, Offset: rec.Offset, Value: value})
	}
}

// noReads drops the consumers from a scenario about something else.
func noReads(h *History) { h.Reads, h.Consumers = nil, 0 }

// eachReplica applies f to every replica of partition part.
func eachReplica(h *History, part int32, f func(rl *ReplicaLog)) {
	for i := range h.Replicas {
		if rl := &h.Replicas[i]; rl.Partition == part {
			f(rl)
		}
	}
}

// dropFinal removes offset off from partition part's final log (shifting nothing).
func dropFinal(h *History, part int32, off int64) {
	pl := &h.Final[part]
	var kept []LogRecord
	for _, r := range pl.Records {
		if r.Offset != off {
			kept = append(kept, r)
		}
	}
	pl.Records = kept
}

func TestCheckNamesEachAnomaly(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History)
		want   []AnomalyKind
	}{
		{"lost write (log truncated)", func(h *History) {
			pl := &h.Final[1]
			pl.Records, pl.HW = pl.Records[:len(pl.Records)-2], pl.HW-2
			for i := range h.Replicas { // the replicas agree with the shorter log
				if rl := &h.Replicas[i]; rl.Partition == 1 {
					rl.Records = rl.Records[:len(rl.Records)-2]
					rl.Batches = rl.Batches[:len(rl.Batches)-1]
				}
			}
			noReads(h)
		}, []AnomalyKind{LostWrite, InconsistentOffset}},
		{"offset rewritten", func(h *History) {
			// the record acknowledged at partition 0 offset 4 was replaced by an unacknowledged one
			h.Writes = append(h.Writes, Write{ID: RecordID{7, 0}, Partition: 0, Sent: h.Start, Outcome: Indeterminate})
			h.Final[0].Records[4].Value = string(Payload(RecordID{7, 0}, 0))
			for i := range h.Replicas {
				if rl := &h.Replicas[i]; rl.Partition == 0 {
					rl.Records[4].Value = h.Final[0].Records[4].Value
				}
			}
			noReads(h)
		}, []AnomalyKind{LostWrite, InconsistentOffset}},
		{"two acknowledgements at one offset", func(h *History) {
			// p1-4 (partition 1 offset 3) was acknowledged at p0-4's offset 2.
			h.write(RecordID{1, 4}).Offset = h.write(RecordID{0, 4}).Offset
		}, []AnomalyKind{InconsistentOffset}},
		{"duplicate", func(h *History) {
			appendFinal(h, 2, h.Final[2].Records[3].Value)
		}, []AnomalyKind{Duplicate, Reordered}},
		{"duplicate across partitions", func(h *History) {
			appendFinal(h, 2, h.Final[0].Records[0].Value)
		}, []AnomalyKind{Duplicate, PhantomRecord, Reordered}},
		{"consumer skipped", func(h *History) {
			h.Reads = append(h.Reads[:5], h.Reads[6:]...)
		}, []AnomalyKind{ReadSkipped}},
		{"consumer went backwards", func(h *History) {
			h.Reads = append(h.Reads[:6], append([]Read{h.Reads[3]}, h.Reads[6:]...)...)
		}, []AnomalyKind{ReadBackwards, ReadSkipped}},
		{"consumer read a record that did not survive", func(h *History) {
			h.Reads[2].Value = "p9-9"
		}, []AnomalyKind{InconsistentOffset}},
		{"replica differs below the HW", func(h *History) {
			rl := h.replica(2, 1)
			rl.Records[3].Value = "p1-999"
			rl.Batches[1].CRC++
		}, []AnomalyKind{ReplicaDivergence}},
		{"in-sync replica short of the HW", func(h *History) {
			rl := h.replica(3, 0)
			rl.Records = rl.Records[:5]
			rl.Batches = rl.Batches[:2]
		}, []AnomalyKind{ReplicaDivergence}},
		{"replica batch epoch differs below the HW", func(h *History) {
			h.replica(3, 2).Batches[0].Epoch = 7
		}, []AnomalyKind{ReplicaDivergence}},
		{"replica unreadable", func(h *History) {
			h.replica(1, 2).Err = "segment: corruption in 00000.log at byte 12"
		}, []AnomalyKind{ReplicaDivergence}},
		{"reordered", func(h *History) {
			pl := &h.Final[0]
			pl.Records[0].Value, pl.Records[2].Value = pl.Records[2].Value, pl.Records[0].Value
			noReads(h)
			eachReplica(h, 0, func(rl *ReplicaLog) {
				rl.Records[0].Value, rl.Records[2].Value = pl.Records[0].Value, pl.Records[2].Value
			})
			h.write(RecordID{0, 0}).Offset, h.write(RecordID{0, 3}).Offset = 2, 0
		}, []AnomalyKind{Reordered}},
		{"failed but written", func(h *History) {
			w := h.write(RecordID{1, 4})
			w.Outcome, w.Err = Failed, "client: not leader"
		}, []AnomalyKind{FailedButWritten}},
		{"indeterminate and written is fine", func(h *History) {
			w := h.write(RecordID{1, 4})
			w.Outcome, w.Err = Indeterminate, "client: timeout"
		}, nil},
		{"phantom record", func(h *History) {
			appendFinal(h, 1, "garbage")
		}, []AnomalyKind{PhantomRecord}},
		{"unverified partition", func(h *History) {
			h.Final[2].Err = "no leader"
		}, []AnomalyKind{Unverified}},
		{"final log with a hole", func(h *History) {
			dropFinal(h, 0, 3)
			noReads(h)
			eachReplica(h, 0, func(rl *ReplicaLog) { rl.Records = append(rl.Records[:3:3], rl.Records[4:]...) })
		}, []AnomalyKind{InconsistentOffset, LostWrite}},
		{"acknowledged records moved to later offsets", func(h *History) {
			// An unacknowledged record slipped in at offset 4: every
			// acknowledged record from there on is one offset later. No
			// record is lost; their offsets changed.
			h.Writes = append(h.Writes, Write{ID: RecordID{7, 0}, Partition: 0, Sent: h.Start, Outcome: Indeterminate})
			in := LogRecord{Offset: 4, Value: string(Payload(RecordID{7, 0}, 0)), Epoch: 2}
			shift := func(recs []LogRecord) []LogRecord {
				out := append(append(append([]LogRecord(nil), recs[:4]...), in), recs[4:]...)
				for i := 5; i < len(out); i++ {
					out[i].Offset++
				}
				return out
			}
			pl := &h.Final[0]
			pl.Records, pl.HW = shift(pl.Records), pl.HW+1
			eachReplica(h, 0, func(rl *ReplicaLog) { rl.Records = shift(rl.Records) })
			noReads(h)
		}, []AnomalyKind{InconsistentOffset}},
		{"acknowledged at an offset past the final HW", func(h *History) {
			h.write(RecordID{1, 5}).Offset = h.Final[2].HW + 3
		}, []AnomalyKind{InconsistentOffset}},
		{"garbage at an acknowledged offset", func(h *History) {
			// Partition 0 offset 0 holds p0-0, whose RecordID is the zero value.
			h.Final[0].Records[0].Value = "garbage"
			eachReplica(h, 0, func(rl *ReplicaLog) { rl.Records[0].Value = "garbage" })
			noReads(h)
		}, []AnomalyKind{InconsistentOffset, LostWrite, PhantomRecord}},
		{"consumer read past the final HW", func(h *History) {
			h.Reads = append(h.Reads, Read{Consumer: 1, Partition: 2, Offset: h.Final[2].HW, Value: "p3-3"})
		}, []AnomalyKind{InconsistentOffset}},
		{"consumer stalled before the HW", func(h *History) {
			h.Reads = h.Reads[:len(h.Reads)-3] // consumer 1's last reads of partition 2
		}, []AnomalyKind{ConsumerBehind}},
		{"consumer read nothing", func(h *History) {
			h.Consumers = 3
		}, []AnomalyKind{ConsumerBehind}},
		{"final log short of its HW", func(h *History) {
			h.Final[1].HW++
			h.Consumers = 0
		}, []AnomalyKind{Unverified}},
		{"no in-sync replica compared", func(h *History) {
			eachReplica(h, 1, func(rl *ReplicaLog) { rl.InISR = false })
		}, []AnomalyKind{Unverified}},
		{"no replica scanned", func(h *History) {
			h.Replicas = nil
		}, []AnomalyKind{Unverified}},
		{"write and read in a partition the history lacks", func(h *History) {
			h.Writes = append(h.Writes, Write{ID: RecordID{5, 0}, Partition: 3, Sent: h.Start, Outcome: Acked, Offset: 0})
			h.Reads = append(h.Reads, Read{Consumer: 0, Partition: 3, Offset: 0, Value: "p5-0"})
		}, []AnomalyKind{Unverified}},
		{"no partitions at all", func(h *History) {
			h.Partitions = 0
		}, []AnomalyKind{Unverified}},
		{"every replica's files differ from the log read back", func(h *History) {
			// The replicas agree with each other (same batches), so only the
			// record-by-record comparison with the final log can catch it.
			eachReplica(h, 1, func(rl *ReplicaLog) { rl.Records[3].Value = "p1-999" })
		}, []AnomalyKind{ReplicaDivergence}},
		{"replica misses a record below the HW", func(h *History) {
			rl := h.replica(2, 1)
			rl.Records = append(rl.Records[:3:3], rl.Records[4:]...)
		}, []AnomalyKind{ReplicaDivergence}},
		{"replica holds an offset twice below the HW", func(h *History) {
			rl := h.replica(1, 0)
			rl.Records = append(rl.Records[:4:4], rl.Records[3:]...)
		}, []AnomalyKind{ReplicaDivergence}},
		{"replica records out of order below the HW", func(h *History) {
			rl := h.replica(3, 2)
			rl.Records[2], rl.Records[3] = rl.Records[3], rl.Records[2]
		}, []AnomalyKind{ReplicaDivergence}},
		{"consumer told its history diverged", func(h *History) {
			// Consumer 1 stopped at a divergence in partition 2: one
			// read-diverged, and not also consumer-behind.
			h.Reads = h.Reads[:len(h.Reads)-3]
			last := h.Reads[len(h.Reads)-1]
			h.Divergences = []Divergence{{Consumer: 1, Partition: 2, Position: last.Offset + 1, LastFetchedEpoch: 2,
				DivergingEpoch: 1, DivergingEndOffset: last.Offset - 1, At: h.End}}
		}, []AnomalyKind{ReadDiverged}},
		{"not converged and crashed", func(h *History) {
			h.Converged, h.ConvergeErr = false, "partition 1: isr [1]"
			h.Exits = []NodeExit{{Node: 2, At: h.End, ScrubPartition: -1, Detail: "node 2 exited: signal: segmentation fault"}}
		}, []AnomalyKind{NotConverged, NodeCrashed}},
		{"a live process fenced for its port", func(h *History) {
			h.LivePortFences = []PortFence{{By: 1, Broker: 3, Incarnation: 30, At: h.End, Alive: h.End.Add(50 * time.Millisecond)}}
		}, []AnomalyKind{LivePortFence}},
		{"restarted in its process, no rot to repair", func(h *History) {
			h.Exits = []NodeExit{{Node: 2, At: h.End, ScrubPartition: 1, InProcess: true, Detail: "node 2 stopped and started again in its process"}}
		}, []AnomalyKind{NodeCrashed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := cleanHistory()
			tc.mutate(h)
			r := Check(h)
			var b strings.Builder
			r.WriteText(&b)
			for _, k := range tc.want {
				if r.Count(k) == 0 {
					t.Errorf("%s not reported:\n%s", k, b.String())
				}
			}
			for k, n := range r.Counts {
				if n > 0 && !containsKind(tc.want, k) {
					t.Errorf("unexpected %s (%d):\n%s", k, n, b.String())
				}
			}
			if len(tc.want) == 0 && !r.OK() {
				t.Errorf("expected OK:\n%s", b.String())
			}
			if r.OK() == (len(tc.want) > 0) {
				t.Errorf("OK() = %v", r.OK())
			}
			if strings.Contains(b.String(), "verdict: OK") == (len(tc.want) > 0) {
				t.Errorf("verdict line wrong:\n%s", b.String())
			}
		})
	}
}

func containsKind(ks []AnomalyKind, k AnomalyKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func TestCheckIgnoresNonISRReplicaTail(t *testing.T) {
	h := cleanHistory()
	rl := h.replica(2, 0)
	rl.InISR = false
	rl.Records[len(rl.Records)-1].Value = "p0-12345" // an old leader's unacknowledged tail, not yet truncated
	if r := Check(h); !r.OK() {
		t.Fatalf("out-of-sync replica reported: %v", r.Anomalies)
	}
}

func TestUnavailabilityWindows(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	h := &History{Start: t0, End: ms(10000), Partitions: 2, Converged: true}
	add := func(part int32, sent, done int, o Outcome) {
		h.Writes = append(h.Writes, Write{ID: RecordID{0, int64(len(h.Writes))}, Partition: part, Sent: ms(sent), Done: ms(done), Outcome: o})
	}
	add(0, 0, 10, Acked)
	add(0, 20, 2000, Acked) // leader died at ~20ms: no ack until 2000
	add(0, 30, 2001, Acked) //
	add(0, 2100, 2110, Acked)
	add(1, 100, 900, Failed) // failed at 900: partition 1 stays without an ack
	add(1, 5000, 0, Pending) // pending to the end (10000): never an ack from 100 on
	ws := unavailability(h)
	if len(ws) < 3 {
		t.Fatalf("windows %v", ws)
	}
	if ws[0].Partition != 1 || ws[0].Len() != 9900*time.Millisecond {
		t.Fatalf("longest %+v", ws[0])
	}
	if ws[1].Partition != 0 || ws[1].Len() != 1980*time.Millisecond {
		t.Fatalf("second %+v (%v)", ws[1], ws[1].Len())
	}
	if ws[2].Partition != 0 || ws[2].Len() != 10*time.Millisecond || !ws[2].Start.Equal(ms(0)) {
		t.Fatalf("third %+v", ws[2])
	}
}

// TestUnavailabilityFailuresDoNotEndAWindow: a partition whose writes all
// fail fast (each one resolved 5 ms after it was sent) for 3 s acknowledged
// nothing for 3 s. Ending a window at every failure reported 5 ms.
func TestUnavailabilityFailuresDoNotEndAWindow(t *testing.T) {
	t0 := time.Unix(0, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	h := &History{Start: t0, End: ms(10000), Partitions: 1}
	add := func(sent, done int, o Outcome) {
		h.Writes = append(h.Writes, Write{ID: RecordID{0, int64(len(h.Writes))}, Partition: 0, Sent: ms(sent), Done: ms(done), Outcome: o})
	}
	add(0, 5, Acked)
	for at := 10; at < 3010; at += 10 {
		add(at, at+5, Failed)
	}
	add(3010, 3015, Acked)
	ws := unavailability(h)
	if len(ws) == 0 || ws[0].Len() != 3005*time.Millisecond || !ws[0].Start.Equal(ms(10)) {
		t.Fatalf("windows %+v", ws)
	}
}

func TestReportKeepsBoundedAnomalies(t *testing.T) {
	h := cleanHistory()
	h.Final[0].Records = nil
	h.Final[0].HW = 0
	h.Reads, h.Replicas = nil, nil
	r := Check(h)
	if r.Count(LostWrite) != 20 {
		t.Fatalf("lost %d, want 20", r.Count(LostWrite))
	}
	n := 0
	for _, a := range r.Anomalies {
		if a.Kind == LostWrite {
			n++
		}
	}
	if n != 20 || fmt.Sprint(r.Anomalies[0].Kind) != string(LostWrite) {
		t.Fatalf("kept %d", n)
	}
}
