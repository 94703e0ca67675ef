package chaos

import (
	"fmt"
	"slices"
	"sort"
)

// Compacted runs (History.Compacted). Every replica's log cleaner removes,
// on its own schedule and below its own HW, records superseded by a later
// record of their key, and tombstones some time after a pass cleaned past
// them; offsets never change. So the final log, each in-sync replica's
// files and what a consumer read may lack records that another of them
// holds, and the checker cannot tell when the cleaner ran. It holds them to
// what the cleaner may do, and nothing more:
//
//   - Every record seen anywhere (the final log, an acknowledgement, a
//     consumer's or member's read, an in-sync replica's files below the
//     HW) is a committed record; all of them together give, per offset, at
//     most one record (else inconsistent-offset), each at one offset (else
//     duplicate or inconsistent-offset), with the key and null value it
//     was written with (newCompaction).
//   - A log (the final log, an in-sync replica) may lack a known record R
//     of key K at offset O only if R is a tombstone, or the log holds a
//     record of K above O (R was superseded), or a tombstone of K was
//     written above O (it may have removed R, and then been removed
//     itself: a known one, or one in doubt whose offset is unknown, unless
//     the same producer wrote it before R). Otherwise the final log has
//     lost R: lost-latest when R is the latest known record of K (the
//     compaction guarantee: a key's latest value is never removed),
//     lost-write when it was acknowledged (checkFinal); an in-sync replica
//     diverges (replicaDiverges).
//   - A reader (consumer, group member) may pass over offset O without
//     reading its known record R only if R may have been removed from the
//     log it read: a tombstone, a record of K above O is known, or a
//     tombstone of K in doubt may lie above it (removable). Its log's
//     leader at the time is unknown, and the later record may have been
//     written after the reader passed O: this is weaker than the check of
//     a run that is not compacted, never stricter.
//
// An in-doubt record that is present anywhere supersedes an earlier one of
// its key as well as an acknowledged record would.

// compaction is the checker's view of a compacted run's partitions.
type compaction struct {
	h       *History
	r       *Report
	refs    map[int32]*ref
	writes  map[RecordID]*Write
	parts   map[int32]*keyedPart
	phantom map[string]bool // "partition/offset/text" of phantoms reported
}

// keyedPart is one partition: every record known to have been committed.
type keyedPart struct {
	known map[int64]*knownRec
	offs  []int64            // known's offsets, ascending
	offOf map[RecordID]int64 // where each known record is
	// latest and lastTomb: per key, the highest offset of a known record
	// (tombstone) of that key.
	latest, lastTomb map[string]int64
	// unplaced: per key, tombstones written (acknowledged or in doubt)
	// whose offset no source shows: they may lie anywhere.
	unplaced map[string][]RecordID
}

// knownRec is a record known at an offset.
type knownRec struct {
	id    RecordID
	key   string // as written (Write.Key)
	tomb  bool   // as written (Write.Tombstone)
	text  string // recordText as some source holds it; "" when only acknowledged
	src   string // the first source, for reports
	acked bool   // acknowledged at this offset
}

// newCompaction gathers every record known at an offset of each partition
// with a reference log, reporting the sources that disagree (see above).
// Check compares every source with the final log where it holds the
// offset; this compares them with each other where it does not.
func newCompaction(h *History, r *Report, refs map[int32]*ref, writes map[RecordID]*Write) *compaction {
	c := &compaction{h: h, r: r, refs: refs, writes: writes, parts: map[int32]*keyedPart{}, phantom: map[string]bool{}}
	r.Compacted = true
	for p, rf := range refs {
		kp := &keyedPart{known: map[int64]*knownRec{}, offOf: map[RecordID]int64{}, latest: map[string]int64{},
			lastTomb: map[string]int64{}, unplaced: map[string][]RecordID{}}
		c.parts[p] = kp
		for _, rec := range rf.pl.Records {
			id, ok := rf.ids[rec.Offset]
			if w := writes[id]; ok && w != nil && w.Partition == p {
				kp.known[rec.Offset] = &knownRec{id: id, key: w.Key, tomb: w.Tombstone, text: rec.text(), src: "the final log"}
				if _, dup := kp.offOf[id]; !dup {
					kp.offOf[id] = rec.Offset
				}
			}
		}
		r.CompactedOffsets += rf.pl.HW - rf.pl.Start - int64(len(rf.pl.Records))
	}
	// The sources, each only where the final log lacks the offset (in its
	// range: out of it, Check reports them).
	for i := range h.Writes {
		w := &h.Writes[i]
		rf := refs[w.Partition]
		if w.Outcome != Acked || rf == nil || !rf.pl.holds(w.Offset) {
			continue
		}
		if _, ok := rf.at[w.Offset]; ok {
			if k := c.parts[w.Partition].known[w.Offset]; k != nil && k.id == w.ID {
				k.acked = true
			}
			continue
		}
		c.note(w.Partition, w.Offset, w.ID, true, "", w.Key, w.Tombstone, "the acknowledgement", true)
	}
	for _, rd := range h.Reads {
		c.noteRead(rd.Partition, rd.Offset, rd.Key, rd.Value, rd.Tombstone, fmt.Sprintf("consumer %d's read", rd.Consumer))
	}
	for _, m := range h.MemberReads {
		c.noteRead(m.Partition, m.Offset, m.Key, m.Value, m.Tombstone, fmt.Sprintf("member %d's read", m.Member))
	}
	for _, rl := range h.Replicas {
		if rl.Err != "" || !rl.InISR {
			continue
		}
		for _, rec := range rl.Records {
			c.noteRead(rl.Partition, rec.Offset, rec.Key, rec.Value, rec.Tombstone, fmt.Sprintf("node %d's files", rl.Node))
		}
	}
	for p, kp := range c.parts {
		for off, k := range kp.known {
			kp.offs = append(kp.offs, off)
			kp.latest[k.key] = max(kp.latest[k.key], off)
			if k.tomb {
				kp.lastTomb[k.key] = max(kp.lastTomb[k.key], off)
			}
		}
		slices.Sort(kp.offs)
		for i := range h.Writes {
			w := &h.Writes[i]
			if _, ok := kp.offOf[w.ID]; !ok && w.Partition == p && w.Tombstone && w.Outcome != Failed {
				kp.unplaced[w.Key] = append(kp.unplaced[w.Key], w.ID)
			}
		}
	}
	return c
}

// noteRead notes a record some source holds at off, if the final log lacks
// it there and off is in the final log's range.
func (c *compaction) noteRead(p int32, off int64, key, value string, tomb bool, src string) {
	rf := c.refs[p]
	if rf == nil || !rf.pl.holds(off) {
		return
	}
	if _, ok := rf.at[off]; ok {
		return
	}
	id, ok := ParsePayload([]byte(value))
	c.note(p, off, id, ok, recordText(key, value, tomb), key, tomb, src, false)
}

// note adds a record src holds (or, acked, acknowledged) at off to what is
// known, reporting a phantom, a record unlike its write, or a conflict
// with what another source holds.
func (c *compaction) note(p int32, off int64, id RecordID, idOK bool, text, key string, tomb bool, src string, acked bool) {
	kp := c.parts[p]
	w := c.writes[id]
	if !idOK || w == nil || w.Partition != p {
		k := fmt.Sprintf("%d/%d/%s", p, off, text)
		if c.phantom[k] {
			return
		}
		c.phantom[k] = true
		detail := fmt.Sprintf("%s has %q, which the workload did not write", src, clip(text))
		if idOK && w != nil {
			detail = fmt.Sprintf("%s has %v, which was produced to partition %d", src, id, w.Partition)
		} else if idOK {
			detail = fmt.Sprintf("%s has %v, which was never produced", src, id)
		}
		c.r.add(Anomaly{Kind: PhantomRecord, Partition: p, Offset: off, Detail: detail})
		return
	}
	if k := kp.known[off]; k != nil {
		switch {
		case k.id != id:
			c.r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: off,
				Detail: fmt.Sprintf("%s has %v at this offset; %s has %v", src, id, k.src, k.id)})
		case text != "" && k.text != "" && text != k.text:
			c.r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: off,
				Detail: fmt.Sprintf("%s has %q at this offset; %s has %q", src, clip(text), k.src, clip(k.text))})
		case k.text == "":
			k.text = text
		}
		k.acked = k.acked || acked
		return
	}
	if o, ok := kp.offOf[id]; ok {
		kind := Duplicate
		if acked {
			kind = InconsistentOffset // acknowledged at one offset, held at another
		}
		c.r.add(Anomaly{Kind: kind, Partition: p, Offset: off,
			Detail: fmt.Sprintf("%v is at offset %d in %s and at offset %d in %s", id, off, src, o, c.parts[p].known[o].src)})
		return
	}
	if text != "" && (key != w.Key || tomb != w.Tombstone) {
		c.r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: off,
			Detail: fmt.Sprintf("%v was written as %q; %s has %q", id, clip(recordText(w.Key, id.String(), w.Tombstone)), src, clip(text))})
	}
	kp.known[off] = &knownRec{id: id, key: w.Key, tomb: w.Tombstone, text: text, src: src, acked: acked}
	kp.offOf[id] = off
}

// placed returns the offset at which some source holds w's record, if any.
func (c *compaction) placed(w *Write) []int64 {
	if kp := c.parts[w.Partition]; kp != nil {
		if o, ok := kp.offOf[w.ID]; ok {
			return []int64{o}
		}
	}
	return nil
}

// deletedLater reports whether a tombstone of k's key may lie above it: a
// known one, or one whose offset is unknown unless its producer wrote it
// before k (an idempotent producer's records keep their order).
func (kp *keyedPart) deletedLater(off int64, k *knownRec) bool {
	if t, ok := kp.lastTomb[k.key]; ok && t > off {
		return true
	}
	for _, id := range kp.unplaced[k.key] {
		if id.Producer != k.id.Producer || id.Seq > k.id.Seq {
			return true
		}
	}
	return false
}

// removable reports whether the cleaner may have removed the record known
// at off from some replica's log: it is a tombstone, a later record of its
// key is known, or a tombstone of its key may lie above it.
func (kp *keyedPart) removable(off int64, k *knownRec) bool {
	return k.tomb || kp.latest[k.key] > off || kp.deletedLater(off, k)
}

// required returns the first record known in [from, to) of partition p
// that no replica's cleaner may have removed: a reader that passed over it
// skipped it.
func (c *compaction) required(p int32, from, to int64) (int64, *knownRec, bool) {
	kp := c.parts[p]
	if kp == nil {
		return 0, nil, false
	}
	for i := sort.Search(len(kp.offs), func(i int) bool { return kp.offs[i] >= from }); i < len(kp.offs) && kp.offs[i] < to; i++ {
		if k := kp.known[kp.offs[i]]; !kp.removable(kp.offs[i], k) {
			return kp.offs[i], k, true
		}
	}
	return 0, nil, false
}

// absence says why a log may lack the record known at off, given holds
// (per key, the highest offset of a record of that key in the log):
// "superseded", "deleted" (a tombstone, or one may lie above it), or ""
// when it may not.
func (kp *keyedPart) absence(off int64, k *knownRec, holds map[string]int64) string {
	switch {
	case holds[k.key] > off:
		return "superseded"
	case k.tomb || kp.deletedLater(off, k):
		return "deleted"
	}
	return ""
}

// keysHeld is, per key, the highest offset of a record of that key among
// recs below hw.
func keysHeld(recs []LogRecord, hw int64) map[string]int64 {
	out := map[string]int64{}
	for _, rec := range recs {
		if rec.Offset < hw {
			out[rec.Key] = max(out[rec.Key], rec.Offset)
		}
	}
	return out
}

// checkFinal holds every partition's final log to every record known in
// its range: present, or absent as the cleaner may leave it.
func (c *compaction) checkFinal() {
	for p, kp := range c.parts {
		pl := c.refs[p].pl
		holds := keysHeld(pl.Records, pl.HW)
		for _, off := range kp.offs {
			k := kp.known[off]
			if _, ok := c.refs[p].at[off]; ok || !pl.holds(off) {
				continue
			}
			why := kp.absence(off, k, holds)
			switch {
			case why != "":
				if k.acked {
					c.r.CompactedAcked++
					if why == "superseded" {
						c.r.CompactedSuperseded++
					} else {
						c.r.CompactedDeleted++
					}
				}
			case kp.latest[k.key] == off:
				c.r.add(Anomaly{Kind: LostLatest, Partition: p, Offset: off,
					Detail: fmt.Sprintf("%v (%s), the latest record of key %q, is not in the final log (known from %s)", k.id, ackedOr(k), k.key, k.src)})
			case k.acked:
				c.r.add(Anomaly{Kind: LostWrite, Partition: p, Offset: off,
					Detail: fmt.Sprintf("%v was acknowledged at offset %d and is not in the final log, which holds no later record of key %q", k.id, off, k.key)})
			default:
				c.r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: off,
					Detail: fmt.Sprintf("%s has %v below the HW; the final log has nothing there, nor a later record of key %q", k.src, k.id, k.key)})
			}
		}
	}
}

func ackedOr(k *knownRec) string {
	if k.acked {
		return "acknowledged"
	}
	return "in doubt, committed"
}

// replicaDiverges compares an in-sync replica's records below the HW with
// the final log and what is known: in offset order, each offset once, the
// final log's record where both hold the offset, and every known record
// present unless the replica's cleaner may have removed it. It returns the
// first difference and false.
func (c *compaction) replicaDiverges(rl ReplicaLog, rf *ref) (Anomaly, bool) {
	pl, kp := rf.pl, c.parts[rl.Partition]
	bad := func(off int64, format string, args ...any) (Anomaly, bool) {
		return Anomaly{Kind: ReplicaDivergence, Partition: rl.Partition, Offset: off, Node: rl.Node, Detail: fmt.Sprintf(format, args...)}, false
	}
	held := map[int64]bool{}
	next := pl.Start
	for _, rec := range rl.Records {
		if rec.Offset >= pl.HW {
			break
		}
		if rec.Offset < pl.Start {
			continue
		}
		if rec.Offset < next {
			return bad(rec.Offset, "the replica holds offset %d again (or out of order) after offset %d, below the HW %d", rec.Offset, next-1, pl.HW)
		}
		if v, ok := rf.at[rec.Offset]; ok && v != rec.text() {
			return bad(rec.Offset, "the replica has %q below the HW %d; the log has %q", clip(rec.text()), pl.HW, clip(v))
		}
		held[rec.Offset] = true // one the final log lacks was compared in newCompaction
		next = rec.Offset + 1
	}
	holds := keysHeld(rl.Records, pl.HW)
	for _, off := range kp.offs {
		k := kp.known[off]
		if !pl.holds(off) || held[off] || kp.absence(off, k, holds) != "" {
			continue
		}
		return bad(off, "the in-sync replica lacks %v (key %q) at offset %d, below the HW %d, and holds no later record of its key", k.id, k.key, off, pl.HW)
	}
	return Anomaly{}, true
}
