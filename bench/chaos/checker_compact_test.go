package chaos

import (
	"slices"
	"strings"
	"testing"
)

// compactHistory is cleanHistory on a compacted topic: every partition's
// record at offset o has key k<o%4> (20 records a partition: offsets 16 to
// 19 hold each key's latest), nothing removed yet.
func compactHistory() *History {
	h := cleanHistory()
	h.Compacted = true
	key := func(off int64) string { return keyName(int(off % 4)) }
	for i := range h.Writes {
		h.Writes[i].Key = key(h.Writes[i].Offset)
	}
	for p := range h.Final {
		for i := range h.Final[p].Records {
			rec := &h.Final[p].Records[i]
			rec.Key = key(rec.Offset)
		}
	}
	for i := range h.Replicas {
		for j := range h.Replicas[i].Records {
			rec := &h.Replicas[i].Records[j]
			rec.Key = key(rec.Offset)
		}
	}
	for i := range h.Reads {
		h.Reads[i].Key = key(h.Reads[i].Offset)
	}
	return h
}

// finalRecord is partition part's record at off in the final log.
func finalRecord(h *History, part int32, off int64) *LogRecord {
	for i := range h.Final[part].Records {
		if rec := &h.Final[part].Records[i]; rec.Offset == off {
			return rec
		}
	}
	panic("no record")
}

// makeTombstone turns partition part's record at off into a tombstone,
// everywhere it is.
func makeTombstone(h *History, part int32, off int64) {
	id, _ := ParsePayload([]byte(finalRecord(h, part, off).Value))
	h.write(id).Tombstone = true
	set := func(value *string, tomb *bool) { *value, *tomb = id.String(), true }
	rec := finalRecord(h, part, off)
	set(&rec.Value, &rec.Tombstone)
	eachReplica(h, part, func(rl *ReplicaLog) {
		for i := range rl.Records {
			if rl.Records[i].Offset == off {
				set(&rl.Records[i].Value, &rl.Records[i].Tombstone)
			}
		}
	})
	for i := range h.Reads {
		if rd := &h.Reads[i]; rd.Partition == part && rd.Offset == off {
			set(&rd.Value, &rd.Tombstone)
		}
	}
}

// compactAway removes partition part's records at offs as every replica's
// cleaner would: from the final log, from every replica's files (whose
// batches holding them become compacted, with a CRC of their own), and
// from what the consumers read (they read after the pass).
func compactAway(h *History, part int32, offs ...int64) {
	for _, off := range offs {
		dropFinal(h, part, off)
		eachReplica(h, part, func(rl *ReplicaLog) { dropReplica(rl, off) })
	}
	h.Reads = slices.DeleteFunc(h.Reads, func(rd Read) bool { return rd.Partition == part && slices.Contains(offs, rd.Offset) })
}

// dropReplica removes off from one replica's files as its cleaner would.
func dropReplica(rl *ReplicaLog, off int64) {
	rl.Records = slices.DeleteFunc(rl.Records, func(rec LogRecord) bool { return rec.Offset == off })
	for i := range rl.Batches {
		if b := &rl.Batches[i]; b.Base <= off && off <= b.Last {
			b.Compacted, b.CRC, b.Size = true, b.CRC+uint32(rl.Node)*100000, b.Size-20
		}
	}
}

// TestCheckCompacted: in a compacted run the checker accepts what the
// cleaner may remove (superseded records, tombstones, records a removed
// tombstone deleted) and still names every anomaly of a run that is not
// compacted, and the loss of a key's latest record (lost-latest).
func TestCheckCompacted(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(h *History)
		want   []AnomalyKind
		acked  int // acknowledged records the report counts as removed by compaction
	}{
		{"nothing removed", func(h *History) {}, nil, 0},
		{"superseded acknowledged records removed", func(h *History) {
			// Keys k1 and k2 of partition 0 keep their latest (17, 18).
			compactAway(h, 0, 1, 5, 9, 13, 2, 6)
		}, nil, 6},
		{"replicas compacted apart", func(h *History) {
			// The final log's leader removed 5; node 2 removed 1 and 5;
			// node 3 nothing yet.
			dropFinal(h, 0, 5)
			dropReplica(h.replica(1, 0), 5)
			dropReplica(h.replica(2, 0), 1)
			dropReplica(h.replica(2, 0), 5)
		}, nil, 1},
		{"latest record of a key missing", func(h *History) {
			dropFinal(h, 0, 17) // k1's latest; the replicas still hold it
			noReads(h)
		}, []AnomalyKind{LostLatest}, 0},
		{"record missing without a later one of its key", func(h *History) {
			dropFinal(h, 0, 13)
			dropFinal(h, 0, 17)
			noReads(h)
		}, []AnomalyKind{LostWrite, LostLatest}, 0},
		{"in-sync replica lacks a key's latest record", func(h *History) {
			dropReplica(h.replica(3, 1), 18)
		}, []AnomalyKind{ReplicaDivergence}, 0},
		{"tombstone removed", func(h *History) {
			makeTombstone(h, 0, 18)
			compactAway(h, 0, 18)
		}, nil, 1},
		{"tombstone removed, and the records it deleted", func(h *History) {
			makeTombstone(h, 1, 14)
			compactAway(h, 1, 2, 6, 10, 14) // 18 (k2) is written after the tombstone: kept
		}, nil, 4},
		{"record written after a removed tombstone lost", func(h *History) {
			makeTombstone(h, 1, 14)
			compactAway(h, 1, 2, 6, 10, 14, 18) // the consumers and replicas lack it too
		}, []AnomalyKind{LostLatest, ReadSkipped, ReplicaDivergence}, 4},
		{"in-doubt tombstone of unknown offset may have deleted the key", func(h *History) {
			h.Writes = append(h.Writes, Write{ID: RecordID{7, 0}, Partition: 2, Sent: h.Start, Outcome: Indeterminate, Key: keyName(3), Tombstone: true})
			compactAway(h, 2, 3, 7, 11, 15, 19)
		}, nil, 5},
		{"superseded by a present in-doubt record", func(h *History) {
			w := h.write(RecordID{1, 25}) // partition 1 offset 17, k1's latest
			if w.Offset != 17 || w.Partition != 1 {
				t.Fatalf("setup: %+v", w)
			}
			w.Outcome, w.Offset, w.Err = Indeterminate, -1, "client: timeout"
			compactAway(h, 1, 13)
		}, nil, 1},
		{"acknowledged at an offset the cleaner emptied, held at another", func(h *History) {
			compactAway(h, 0, 1) // k1, superseded by 5
			id, _ := ParsePayload([]byte(finalRecord(h, 0, 5).Value))
			h.write(id).Offset = 1
		}, []AnomalyKind{InconsistentOffset}, 1},
		{"record at a wrong offset", func(h *History) {
			// An unacknowledged record slipped in at offset 4: every
			// acknowledged record from there on is one offset later.
			h.Writes = append(h.Writes, Write{ID: RecordID{7, 0}, Partition: 0, Sent: h.Start, Outcome: Indeterminate, Key: keyName(0)})
			in := LogRecord{Offset: 4, Value: string(Payload(RecordID{7, 0}, 0)), Epoch: 2, Key: keyName(0)}
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
		}, []AnomalyKind{InconsistentOffset}, 0},
		{"record with another key than written", func(h *History) {
			finalRecord(h, 2, 6).Key = keyName(3)
			eachReplica(h, 2, func(rl *ReplicaLog) { rl.Records[6].Key = keyName(3) })
			noReads(h)
		}, []AnomalyKind{InconsistentOffset}, 0},
		{"duplicate where the final log has a gap", func(h *History) {
			// The record at offset 1 was in doubt and is gone; node 2
			// holds the one at offset 5 there too.
			compactAway(h, 0, 1)
			w := h.write(RecordID{1, 0})
			w.Outcome, w.Offset = Indeterminate, -1
			rec := *finalRecord(h, 0, 5)
			rec.Offset = 1
			rl := h.replica(2, 0)
			rl.Records = slices.Insert(rl.Records, 1, rec)
		}, []AnomalyKind{Duplicate}, 0},
		{"consumer skipped a superseded record", func(h *History) {
			h.Reads = slices.DeleteFunc(h.Reads, func(rd Read) bool { return rd.Consumer == 1 && rd.Partition == 0 && rd.Offset == 13 })
		}, nil, 0},
		{"consumer skipped a key's latest record", func(h *History) {
			h.Reads = slices.DeleteFunc(h.Reads, func(rd Read) bool { return rd.Consumer == 1 && rd.Partition == 0 && rd.Offset == 17 })
		}, []AnomalyKind{ReadSkipped}, 0},
		{"consumer stopped before a key's latest record", func(h *History) {
			h.Reads = slices.DeleteFunc(h.Reads, func(rd Read) bool { return rd.Consumer == 0 && rd.Partition == 2 && rd.Offset >= 17 })
		}, []AnomalyKind{ConsumerBehind}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := compactHistory()
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
			if r.CompactedAcked != tc.acked {
				t.Errorf("%d acknowledged records counted as compacted away, want %d:\n%s", r.CompactedAcked, tc.acked, b.String())
			}
			if warned := strings.Contains(b.String(), "WARNING: compaction removed no acknowledged record"); warned != (tc.acked == 0) {
				t.Errorf("warning shown: %v, want %v:\n%s", warned, tc.acked == 0, b.String())
			}
		})
	}
}

// TestCheckCompactedMembers: a group member need not have read a record
// the cleaner may have removed, but must have read a key's latest.
func TestCheckCompactedMembers(t *testing.T) {
	for _, c := range []struct {
		name string
		skip int64
		want AnomalyKind
	}{
		{"superseded", 9, ""},
		{"latest", 17, MemberSkipped},
	} {
		h := compactHistory()
		h.Members = 2
		for _, rec := range h.Final[0].Records {
			if rec.Offset != c.skip {
				h.MemberReads = append(h.MemberReads, MemberRead{Partition: 0, Offset: rec.Offset, Value: rec.Value, Key: rec.Key})
			}
		}
		for p := int32(1); p < 3; p++ {
			for _, rec := range h.Final[p].Records {
				h.MemberReads = append(h.MemberReads, MemberRead{Partition: p, Offset: rec.Offset, Value: rec.Value, Key: rec.Key})
			}
		}
		r := Check(h)
		for k, n := range r.Counts {
			if n > 0 && k != c.want {
				t.Errorf("%s: unexpected %s (%v)", c.name, k, r.Anomalies)
			}
		}
		if c.want != "" && r.Count(c.want) == 0 {
			t.Errorf("%s: %s not reported", c.name, c.want)
		}
	}
}
