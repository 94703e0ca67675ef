package chaos

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// AnomalyKind names one way the system broke its promise.
type AnomalyKind string

// Safety anomalies: any one fails the run.
const (
	LostWrite          AnomalyKind = "lost-write"          // acknowledged, absent from the final log (compacted: which holds no later record of its key)
	LostLatest         AnomalyKind = "lost-latest"         // compacted: a key's latest record (not a tombstone) absent from the final log
	InconsistentOffset AnomalyKind = "inconsistent-offset" // one offset, two different records (ack, read, final log, replica)
	Duplicate          AnomalyKind = "duplicate"           // one record at two offsets (or in two partitions)
	ReadSkipped        AnomalyKind = "read-skipped"        // a consumer's next offset jumped forward
	ReadBackwards      AnomalyKind = "read-backwards"      // a consumer's next offset went back (or repeated)
	ReplicaDivergence  AnomalyKind = "replica-divergence"  // an in-sync replica differs from the log below the HW
	Reordered          AnomalyKind = "reordered"           // a producer's records in one partition out of order
	FailedButWritten   AnomalyKind = "failed-but-written"  // reported as certainly not written, yet in the log
	PhantomRecord      AnomalyKind = "phantom-record"      // in the log but never produced (or for another partition)
	ReadDiverged       AnomalyKind = "read-diverged"       // a leader told a consumer its log no longer holds records the consumer read (log truncated)
	LostCommit         AnomalyKind = "lost-commit"         // a group's committed offset read back is not the last acknowledged commit (nor a later attempt)
	MemberSkipped      AnomalyKind = "member-skipped"      // no member of the shared group read a record below one a member read
	Unverified         AnomalyKind = "unverified"          // a partition could not be read back (entirely), no in-sync replica's files could be compared, or nothing was acknowledged in it
)

// Liveness and robustness anomalies: also fail the run, reported apart.
const (
	NotConverged   AnomalyKind = "not-converged"   // replicas never all back in sync after healing
	NodeCrashed    AnomalyKind = "node-crashed"    // a node stopped on its own, exiting or starting again in its process (other than its scrub finding a rot-sealed torn tail)
	ConsumerBehind AnomalyKind = "consumer-behind" // a consumer never read a partition up to the final HW
	NoFaults       AnomalyKind = "no-faults"       // no fault was applied: the run tested nothing
	WritesStalled  AnomalyKind = "writes-stalled"  // no record sent to a partition after the faults ended was acknowledged
	MembersBehind  AnomalyKind = "members-behind"  // the shared group's members never read a partition up to the final HW
	LivePortFence  AnomalyKind = "live-port-fence" // a live process (paused, cut off) fenced because its port was found closed (port_fences.go)
)

// SafetyKinds and LivenessKinds list the anomaly kinds in report order.
var (
	SafetyKinds   = []AnomalyKind{LostWrite, LostLatest, InconsistentOffset, Duplicate, ReadSkipped, ReadBackwards, ReplicaDivergence, Reordered, FailedButWritten, PhantomRecord, ReadDiverged, LostCommit, MemberSkipped, Unverified}
	LivenessKinds = []AnomalyKind{NotConverged, NodeCrashed, ConsumerBehind, MembersBehind, NoFaults, WritesStalled, LivePortFence}
)

// Anomaly is one finding.
type Anomaly struct {
	Kind      AnomalyKind
	Partition int32 // -1 when not about one partition
	Offset    int64 // -1 when not about one offset
	Node      int32 // 0 when not about one node
	Detail    string
}

func (a Anomaly) String() string {
	var b strings.Builder
	b.WriteString(string(a.Kind))
	if a.Partition >= 0 {
		fmt.Fprintf(&b, " partition=%d", a.Partition)
	}
	if a.Offset >= 0 {
		fmt.Fprintf(&b, " offset=%d", a.Offset)
	}
	if a.Node > 0 {
		fmt.Fprintf(&b, " node=%d", a.Node)
	}
	return b.String() + ": " + a.Detail
}

// Window is a stretch of time during which records were being written to a
// partition and no acknowledgement arrived (failures do not end it).
type Window struct {
	Partition  int32
	Start, End time.Time
}

// Len is the window's duration.
func (w Window) Len() time.Duration { return w.End.Sub(w.Start) }

// Report is the checker's verdict.
type Report struct {
	Writes, Acked, Failed, Indeterminate, Pending int
	IndeterminatePresent                          int // indeterminate or pending records found in the log
	Reads                                         int
	FinalRecords                                  int
	ReplicasChecked                               int
	Commits, CommitsAcked                         int // group commits made, and acknowledged
	Members, MemberReads, MemberRereads           int // group members, records they read, and read again after a handover
	MemberRejoins, MemberDeaths                   int // times a member left and joined again, and of those died instead of leaving
	MemberStalls, StallsLeft                      int // times a member stopped polling past its max poll interval, and of those left the group

	// Compacted runs (History.Compacted): acknowledged records absent from
	// the final log as the cleaner may leave it (CompactedAcked), of those
	// superseded by a later record of their key in it, and tombstones or
	// records of a key a tombstone deleted; and the offsets below the
	// final HWs that hold no record.
	Compacted                             bool
	CompactedAcked                        int
	CompactedSuperseded, CompactedDeleted int
	CompactedOffsets                      int64

	// Rots is how many sealed segments rot-sealed torn tails damaged, and
	// ScrubRepairs how many of them the damaged node's scrub found
	// (stopping the node: not a crash), InProcessRepairs how many of
	// those the node repaired by starting again in its process (the
	// others exited). A rot never found and still on the disk at the end
	// is corruption in the replica's files (replica-divergence).
	Rots, ScrubRepairs, InProcessRepairs int
	// Repairs lists the rots, each with the stop that repaired it.
	Repairs []Repair

	Counts    map[AnomalyKind]int
	Anomalies []Anomaly // at most maxPerKind of each kind

	// Unavailability observed by the producers: the longest windows, longest first.
	Windows []Window
	Start   time.Time
}

// Repair is a rot and the stop of its node that repaired it (By.Node 0:
// none did).
type Repair struct {
	Rot Rot
	By  NodeExit
}

// maxPerKind bounds how many anomalies of one kind a report keeps (all are counted).
const maxPerKind = 25

// maxWindows is how many unavailability windows a report keeps.
const maxWindows = 8

func (r *Report) add(a Anomaly) {
	r.Counts[a.Kind]++
	if r.Counts[a.Kind] <= maxPerKind {
		r.Anomalies = append(r.Anomalies, a)
	}
}

// Count is the number of anomalies of kind k.
func (r *Report) Count(k AnomalyKind) int { return r.Counts[k] }

// SafetyViolations counts every safety anomaly.
func (r *Report) SafetyViolations() int {
	n := 0
	for _, k := range SafetyKinds {
		n += r.Counts[k]
	}
	return n
}

// OK reports whether the run found no anomaly at all.
func (r *Report) OK() bool {
	for _, n := range r.Counts {
		if n > 0 {
			return false
		}
	}
	return true
}

// LongestUnavailability is the longest window (zero if none).
func (r *Report) LongestUnavailability() time.Duration {
	if len(r.Windows) == 0 {
		return 0
	}
	return r.Windows[0].Len()
}

// Check verifies a history. It is pure: everything it needs is in h.
func Check(h *History) *Report {
	r := &Report{Counts: map[AnomalyKind]int{}, Start: h.Start}
	if h.Partitions <= 0 {
		r.add(Anomaly{Kind: Unverified, Partition: -1, Offset: -1, Detail: "the history has no partitions: nothing was checked"})
	}
	final := map[int32]*PartitionLog{}
	for i := range h.Final {
		final[h.Final[i].Partition] = &h.Final[i]
	}
	// The reference log of every partition: offset -> value, and where each record is.
	refs := map[int32]*ref{}
	placed := map[RecordID][]int32{} // partitions a record appears in
	writes := map[RecordID]*Write{}
	for i := range h.Writes {
		writes[h.Writes[i].ID] = &h.Writes[i]
	}
	for p := int32(0); p < int32(h.Partitions); p++ {
		pl := final[p]
		if pl == nil || pl.Err != "" {
			detail := "the partition was not read back"
			if pl != nil {
				detail = "the partition could not be read back: " + pl.Err
			}
			r.add(Anomaly{Kind: Unverified, Partition: p, Offset: -1, Detail: detail})
			continue
		}
		rf := &ref{pl: pl, at: make(map[int64]string, len(pl.Records)), ids: make(map[int64]RecordID, len(pl.Records)), where: map[RecordID][]int64{}}
		refs[p] = rf
		r.FinalRecords += len(pl.Records)
		next := pl.Start
		for _, rec := range pl.Records {
			switch {
			case h.Compacted && rec.Offset < next:
				// The cleaner leaves gaps (removed records), never a
				// step back.
				r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: rec.Offset,
					Detail: fmt.Sprintf("the final log goes back from offset %d to %d", next-1, rec.Offset)})
			case !h.Compacted && rec.Offset != next:
				r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: next,
					Detail: fmt.Sprintf("the final log jumps from offset %d to %d", next, rec.Offset)})
			}
			next = rec.Offset + 1
			rf.at[rec.Offset] = rec.text()
			id, ok := ParsePayload([]byte(rec.Value))
			if !ok {
				r.add(Anomaly{Kind: PhantomRecord, Partition: p, Offset: rec.Offset, Detail: fmt.Sprintf("value %q was not written by the workload", clip(rec.text()))})
				continue
			}
			rf.ids[rec.Offset] = id
			w := writes[id]
			switch {
			case w == nil:
				r.add(Anomaly{Kind: PhantomRecord, Partition: p, Offset: rec.Offset, Detail: fmt.Sprintf("%v was never produced", id)})
			case w.Partition != p:
				r.add(Anomaly{Kind: PhantomRecord, Partition: p, Offset: rec.Offset, Detail: fmt.Sprintf("%v was produced to partition %d", id, w.Partition)})
			case w.Key != rec.Key || w.Tombstone != rec.Tombstone:
				r.add(Anomaly{Kind: InconsistentOffset, Partition: p, Offset: rec.Offset, Detail: fmt.Sprintf("%v was written as %q; the final log has %q",
					id, clip(recordText(w.Key, id.String(), w.Tombstone)), clip(rec.text()))})
			}
			if len(rf.where[id]) == 0 {
				placed[id] = append(placed[id], p)
			}
			rf.where[id] = append(rf.where[id], rec.Offset)
		}
		// A compacted log may end short of its HW (the cleaner removed
		// its last records): the read-back reports a read it could not
		// finish (PartitionLog.Err).
		if next < pl.HW && !h.Compacted {
			r.add(Anomaly{Kind: Unverified, Partition: p, Offset: next,
				Detail: fmt.Sprintf("the final log ends at offset %d, below its HW %d", next, pl.HW)})
		}
		for id, offs := range rf.where {
			if len(offs) > 1 {
				r.add(Anomaly{Kind: Duplicate, Partition: p, Offset: offs[1], Detail: fmt.Sprintf("%v is at offsets %v", id, offs)})
			}
		}
	}
	for id, ps := range placed {
		if len(ps) > 1 {
			r.add(Anomaly{Kind: Duplicate, Partition: -1, Offset: -1, Detail: fmt.Sprintf("%v is in partitions %v", id, ps)})
		}
	}
	// In a compacted run, records the final log lacks are still known
	// from the acknowledgements, the reads and the replicas' files.
	var cp *compaction
	if h.Compacted {
		cp = newCompaction(h, r, refs, writes)
	}

	// A write or read for a partition the history has no reference log
	// for, and does not count among its partitions, is unchecked too.
	unknown := map[int32]bool{}
	noRef := func(p int32, what string) {
		if (p < 0 || p >= int32(h.Partitions)) && !unknown[p] {
			unknown[p] = true
			r.add(Anomaly{Kind: Unverified, Partition: p, Offset: -1,
				Detail: fmt.Sprintf("%s partition %d, which is not among the history's %d partitions", what, p, h.Partitions)})
		}
	}

	// Producers' view.
	ackedIn := map[int32]int{}
	for i := range h.Writes {
		w := &h.Writes[i]
		r.Writes++
		rf := refs[w.Partition]
		var found []int64
		if rf != nil {
			found = rf.where[w.ID]
		}
		if len(found) == 0 && cp != nil {
			found = cp.placed(w)
		}
		switch w.Outcome {
		case Acked:
			r.Acked++
			ackedIn[w.Partition]++
			if rf == nil {
				noRef(w.Partition, "a record was acknowledged in")
				continue // reported as unverified
			}
			if v, ok := rf.at[w.Offset]; ok {
				if id, ok := rf.ids[w.Offset]; !ok || id != w.ID {
					r.add(Anomaly{Kind: InconsistentOffset, Partition: w.Partition, Offset: w.Offset,
						Detail: fmt.Sprintf("%v was acknowledged at this offset; the final log has %q there", w.ID, clip(v))})
				}
			} else if w.Offset >= rf.pl.HW || w.Offset < rf.pl.Start {
				r.add(Anomaly{Kind: InconsistentOffset, Partition: w.Partition, Offset: w.Offset,
					Detail: fmt.Sprintf("%v was acknowledged at an offset outside the final log [%d, %d)", w.ID, rf.pl.Start, rf.pl.HW)})
			}
			// In a compacted run the cleaner may have removed it:
			// checkFinal judges what the final log lacks.
			if len(found) == 0 && cp == nil {
				r.add(Anomaly{Kind: LostWrite, Partition: w.Partition, Offset: w.Offset,
					Detail: fmt.Sprintf("%v was acknowledged at %v (offset %d) and is not in the final log", w.ID, w.Done.Sub(h.Start).Round(time.Millisecond), w.Offset)})
			}
		case Failed:
			r.Failed++
			if len(found) > 0 {
				r.add(Anomaly{Kind: FailedButWritten, Partition: w.Partition, Offset: found[0],
					Detail: fmt.Sprintf("%v failed with %q (certainly not written), yet it is in the log", w.ID, w.Err)})
			}
		case Indeterminate:
			r.Indeterminate++
			if len(found) > 0 {
				r.IndeterminatePresent++
			}
		default:
			r.Pending++
			if len(found) > 0 {
				r.IndeterminatePresent++
			}
		}
	}
	// A partition in which nothing was acknowledged cannot show a lost
	// write or a moved one: "none lost" there is no evidence.
	for p := int32(0); p < int32(h.Partitions); p++ {
		if refs[p] != nil && ackedIn[p] == 0 {
			r.add(Anomaly{Kind: Unverified, Partition: p, Offset: -1,
				Detail: fmt.Sprintf("no record was acknowledged in the partition (%d written to it in all): no lost write could be seen there", writtenTo(h, p))})
		}
	}
	// Order: a producer's records in one partition appear in sequence order.
	for p, rf := range refs {
		last := map[int]RecordID{}
		for _, rec := range rf.pl.Records {
			id, ok := ParsePayload([]byte(rec.Value))
			if !ok {
				continue
			}
			if prev, seen := last[id.Producer]; seen && id.Seq <= prev.Seq {
				r.add(Anomaly{Kind: Reordered, Partition: p, Offset: rec.Offset, Detail: fmt.Sprintf("%v follows %v", id, prev)})
			}
			last[id.Producer] = id
		}
	}

	// Consumers' view.
	type ckey struct {
		consumer int
		part     int32
	}
	pos := map[ckey]int64{}
	for _, rd := range h.Reads {
		r.Reads++
		k := ckey{rd.Consumer, rd.Partition}
		prev, seen := pos[k]
		if !seen {
			prev = -1
			if rf := refs[rd.Partition]; rf != nil {
				prev = rf.pl.Start - 1
			}
		}
		switch {
		case rd.Offset > prev+1 && cp != nil:
			// Skipping what the cleaner may have removed is reading on.
			if o, rec, ok := cp.required(rd.Partition, prev+1, rd.Offset); ok {
				r.add(Anomaly{Kind: ReadSkipped, Partition: rd.Partition, Offset: o,
					Detail: fmt.Sprintf("consumer %d read offset %d after %d, skipping %v at offset %d, which no later record of key %q supersedes", rd.Consumer, rd.Offset, prev, rec.id, o, rec.key)})
			}
		case rd.Offset > prev+1:
			r.add(Anomaly{Kind: ReadSkipped, Partition: rd.Partition, Offset: rd.Offset,
				Detail: fmt.Sprintf("consumer %d read offset %d after %d (skipped %d)", rd.Consumer, rd.Offset, prev, rd.Offset-prev-1)})
		case rd.Offset <= prev:
			r.add(Anomaly{Kind: ReadBackwards, Partition: rd.Partition, Offset: rd.Offset,
				Detail: fmt.Sprintf("consumer %d read offset %d after %d", rd.Consumer, rd.Offset, prev)})
		}
		pos[k] = rd.Offset
		rf := refs[rd.Partition]
		if rf == nil {
			noRef(rd.Partition, "a consumer read")
			continue
		}
		if v, ok := rf.at[rd.Offset]; !ok {
			if cp == nil || !rf.pl.holds(rd.Offset) { // else newCompaction checked it
				r.add(Anomaly{Kind: InconsistentOffset, Partition: rd.Partition, Offset: rd.Offset,
					Detail: fmt.Sprintf("consumer %d read %q; the final log has nothing there", rd.Consumer, clip(rd.text()))})
			}
		} else if v != rd.text() {
			r.add(Anomaly{Kind: InconsistentOffset, Partition: rd.Partition, Offset: rd.Offset,
				Detail: fmt.Sprintf("consumer %d read %q; the final log has %q", rd.Consumer, clip(rd.text()), clip(v))})
		}
	}

	// A consumer told its history was truncated read records below the HW
	// that a leader's log no longer holds.
	diverged := map[ckey]bool{}
	for _, d := range h.Divergences {
		diverged[ckey{d.Consumer, d.Partition}] = true
		r.add(Anomaly{Kind: ReadDiverged, Partition: d.Partition, Offset: d.DivergingEndOffset,
			Detail: fmt.Sprintf("consumer %d at position %d (last fetched epoch %d) was told the leader's log parts from what it read at offset %d "+
				"(leader's diverging epoch %d): records read below the HW were truncated", d.Consumer, d.Position, d.LastFetchedEpoch,
				d.DivergingEndOffset, d.DivergingEpoch)})
	}

	// Every consumer read every partition up to its final HW (one that
	// stalled would hide skips in what it never read). One that stopped at
	// a divergence is reported above, as what it is.
	for c := range h.Consumers {
		for p := int32(0); p < int32(h.Partitions); p++ {
			rf := refs[p]
			if rf == nil || diverged[ckey{c, p}] {
				continue
			}
			last, seen := pos[ckey{c, p}]
			if !seen {
				last = rf.pl.Start - 1
			}
			if cp != nil {
				if o, rec, ok := cp.required(p, last+1, rf.pl.HW); ok {
					r.add(Anomaly{Kind: ConsumerBehind, Partition: p, Offset: o,
						Detail: fmt.Sprintf("consumer %d never read offsets %d to %d (the final HW is %d), among them %v at offset %d, the latest record of key %q",
							c, last+1, rf.pl.HW-1, rf.pl.HW, rec.id, o, rec.key)})
				}
				continue
			}
			if last+1 < rf.pl.HW {
				r.add(Anomaly{Kind: ConsumerBehind, Partition: p, Offset: last + 1,
					Detail: fmt.Sprintf("consumer %d never read offsets %d to %d (the final HW is %d)", c, last+1, rf.pl.HW-1, rf.pl.HW)})
			}
		}
	}

	// Replicas: every in-sync replica holds the reference log below the HW,
	// and in-sync replicas hold the same batches there.
	type bkey struct {
		part int32
		base int64
	}
	firstBatch := map[bkey]struct {
		node int32
		b    BatchInfo
	}{}
	compared := map[int32]int{}
	for _, rl := range h.Replicas {
		if rl.Err != "" {
			r.add(Anomaly{Kind: ReplicaDivergence, Partition: rl.Partition, Offset: -1, Node: rl.Node, Detail: "the replica's files could not be read: " + rl.Err})
			continue
		}
		rf := refs[rl.Partition]
		if rf == nil || !rl.InISR {
			continue
		}
		r.ReplicasChecked++
		compared[rl.Partition]++
		hw := rf.pl.HW
		if cp != nil {
			if a, ok := cp.replicaDiverges(rl, rf); !ok {
				r.add(a)
			}
		} else if a, ok := replicaDiverges(rl, rf.pl, rf.at); !ok {
			r.add(a)
		}
		for _, b := range rl.Batches {
			if b.Last >= hw {
				break
			}
			k := bkey{rl.Partition, b.Base}
			if f, ok := firstBatch[k]; !ok {
				firstBatch[k] = struct {
					node int32
					b    BatchInfo
				}{rl.Node, b}
			} else if !sameBatch(f.b, b, h.Compacted) {
				r.add(Anomaly{Kind: ReplicaDivergence, Partition: rl.Partition, Offset: b.Base, Node: rl.Node,
					Detail: fmt.Sprintf("batch %+v differs from node %d's %+v below the HW %d", b, f.node, f.b, hw)})
			}
		}
	}

	for p := int32(0); p < int32(h.Partitions); p++ {
		if refs[p] != nil && compared[p] == 0 {
			r.add(Anomaly{Kind: Unverified, Partition: p, Offset: -1,
				Detail: "no in-sync replica's files could be compared with the final log"})
		}
	}

	if !h.Converged {
		r.add(Anomaly{Kind: NotConverged, Partition: -1, Offset: -1, Detail: h.ConvergeErr})
	}
	repairedBy, crashes := scrubRepairs(h.Rots, h.Exits)
	r.Rots = len(h.Rots)
	for ri, e := range repairedBy {
		rp := Repair{Rot: h.Rots[ri]}
		if e >= 0 {
			rp.By = h.Exits[e]
			r.ScrubRepairs++
			if rp.By.InProcess {
				r.InProcessRepairs++
			}
		}
		r.Repairs = append(r.Repairs, rp)
	}
	for _, i := range crashes {
		r.add(Anomaly{Kind: NodeCrashed, Partition: -1, Offset: -1, Node: h.Exits[i].Node, Detail: h.Exits[i].Detail})
	}
	for _, f := range h.LivePortFences {
		r.add(Anomaly{Kind: LivePortFence, Partition: -1, Offset: -1, Node: f.Broker, Detail: f.String()})
	}
	resumed(h, r)
	checkCommits(h, r)
	checkMembers(h, r, cp)
	if cp != nil {
		cp.checkFinal()
	}
	if h.FaultsApplied == 0 {
		r.add(Anomaly{Kind: NoFaults, Partition: -1, Offset: -1,
			Detail: "the nemesis applied no fault (all skipped or failed, or none scheduled): the history shows the system without faults only"})
	}
	r.Windows = unavailability(h)
	sort.SliceStable(r.Anomalies, func(i, j int) bool {
		return slices.Index(append(SafetyKinds, LivenessKinds...), r.Anomalies[i].Kind) < slices.Index(append(SafetyKinds, LivenessKinds...), r.Anomalies[j].Kind)
	})
	return r
}

// ref is a partition's reference log (the final log) as Check indexes it.
type ref struct {
	pl    *PartitionLog
	at    map[int64]string   // offset -> record (recordText)
	ids   map[int64]RecordID // offset -> the record's RecordID, where it has one
	where map[RecordID][]int64
}

// holds reports whether off lies in the log's range [Start, HW).
func (pl *PartitionLog) holds(off int64) bool { return off >= pl.Start && off < pl.HW }

// sameBatch reports whether two in-sync replicas' batches at one base
// offset agree. They are byte for byte the same, but in a compacted run
// each replica's cleaner rewrites its batches on its own (BatchInfo.Compacted):
// then only their epoch must agree (a cleaner merges the empty batches of a
// run into one, so one replica's may span more offsets); their records
// are compared one by one.
func sameBatch(a, b BatchInfo, compacted bool) bool {
	if a == b {
		return true
	}
	return compacted && (a.Compacted || b.Compacted) && a.Base == b.Base && a.Epoch == b.Epoch
}

// checkCommits holds every consumer group to its commits: after the run,
// a partition's committed offset is that of the consumer's last
// acknowledged commit of it, or of a later attempt (one that failed may
// have been applied); one never acknowledged is one of the attempts, or
// absent. A run whose groups could not be read back, or in which no commit
// was acknowledged, checked nothing and is unverified.
func checkCommits(h *History, r *Report) {
	if !h.Groups {
		return
	}
	byConsumer := map[int][]Commit{}
	for _, c := range h.Commits {
		byConsumer[c.Consumer] = append(byConsumer[c.Consumer], c)
		r.Commits++
		if c.Acked {
			r.CommitsAcked++
		}
	}
	if r.CommitsAcked == 0 {
		r.add(Anomaly{Kind: Unverified, Partition: -1, Offset: -1,
			Detail: fmt.Sprintf("no group commit was acknowledged (%d made): the groups' offsets were not checked", r.Commits)})
		return
	}
	for c := range h.Consumers {
		if e := h.CommittedErr[c]; e != "" {
			r.add(Anomaly{Kind: Unverified, Partition: -1, Offset: -1,
				Detail: fmt.Sprintf("group %s's offsets could not be read back: %s", GroupName(c), e)})
			continue
		}
		got := h.Committed[c]
		for p := range int32(h.Partitions) {
			lastAcked := -1 // index of the last acknowledged commit of p
			for i, cm := range byConsumer[c] {
				if _, ok := cm.Offsets[p]; ok && cm.Acked {
					lastAcked = i
				}
			}
			allowed := map[int64]bool{} // offsets the group may hold for p
			for _, cm := range byConsumer[c][max(lastAcked, 0):] {
				if o, ok := cm.Offsets[p]; ok {
					allowed[o] = true
				}
			}
			o, ok := got[p]
			switch {
			case lastAcked >= 0 && !ok:
				cm := byConsumer[c][lastAcked]
				r.add(Anomaly{Kind: LostCommit, Partition: p, Offset: cm.Offsets[p],
					Detail: fmt.Sprintf("group %s has no offset for the partition; offset %d was acknowledged at t+%v",
						GroupName(c), cm.Offsets[p], cm.Done.Sub(h.Start).Round(time.Millisecond))})
			case ok && !allowed[o]:
				detail := fmt.Sprintf("group %s holds offset %d, which no commit since the last acknowledged one sent", GroupName(c), o)
				if lastAcked >= 0 {
					cm := byConsumer[c][lastAcked]
					detail += fmt.Sprintf(" (that one: offset %d, acknowledged at t+%v)", cm.Offsets[p], cm.Done.Sub(h.Start).Round(time.Millisecond))
				}
				r.add(Anomaly{Kind: LostCommit, Partition: p, Offset: o, Detail: detail})
			}
		}
	}
}

// replicaDiverges compares an in-sync replica's records below the HW with
// the final log: in offset order, each offset once, every offset from the
// log start to the HW present (except where the final log itself has a hole,
// reported already) and holding the same record. It returns the first
// difference and false.
func replicaDiverges(rl ReplicaLog, pl *PartitionLog, at map[int64]string) (Anomaly, bool) {
	hw := pl.HW
	bad := func(off int64, format string, args ...any) (Anomaly, bool) {
		return Anomaly{Kind: ReplicaDivergence, Partition: rl.Partition, Offset: off, Node: rl.Node, Detail: fmt.Sprintf(format, args...)}, false
	}
	next := pl.Start // every offset below next is checked
	for _, rec := range rl.Records {
		if rec.Offset >= hw {
			break
		}
		if rec.Offset < pl.Start {
			continue
		}
		if rec.Offset < next {
			return bad(rec.Offset, "the replica holds offset %d again (or out of order) after offset %d, below the HW %d", rec.Offset, next-1, hw)
		}
		for ; next < rec.Offset; next++ {
			if _, ok := at[next]; ok {
				return bad(next, "the in-sync replica has no record at offset %d (its next is %d), below the HW %d", next, rec.Offset, hw)
			}
		}
		if v, ok := at[rec.Offset]; !ok || v != rec.Value {
			return bad(rec.Offset, "the replica has %q below the HW %d; the log has %q", clip(rec.Value), hw, clip(v))
		}
		next = rec.Offset + 1
	}
	for ; next < hw; next++ {
		if _, ok := at[next]; ok {
			return bad(next, "the in-sync replica ends at offset %d, below the HW %d", next, hw)
		}
	}
	return Anomaly{}, true
}

// unavailability finds, per partition, the stretches without an
// acknowledgement while records were being written: from the later of the
// last ack and the first record sent after it, to the next ack (or, after
// the last one, to the last outcome). A failed record does not end a
// stretch: a partition whose writes all fail fast is unavailable, not
// briefly busy many times over. It returns the longest maxWindows, longest
// first.
func unavailability(h *History) []Window {
	out := allWindows(h)
	if len(out) > maxWindows {
		out = out[:maxWindows]
	}
	return out
}

// allWindows is every unavailability window (see unavailability), longest
// first.
func allWindows(h *History) []Window {
	type ev struct {
		t    time.Time
		send bool
		ack  bool
	}
	byPart := map[int32][]ev{}
	for _, w := range h.Writes {
		byPart[w.Partition] = append(byPart[w.Partition], ev{t: w.Sent, send: true})
		done := w.Done
		if w.Outcome == Pending || done.IsZero() {
			done = h.End
		}
		byPart[w.Partition] = append(byPart[w.Partition], ev{t: done, ack: w.Outcome == Acked})
	}
	var out []Window
	for p, evs := range byPart {
		sort.SliceStable(evs, func(i, j int) bool {
			if !evs[i].t.Equal(evs[j].t) {
				return evs[i].t.Before(evs[j].t)
			}
			return evs[i].send && !evs[j].send
		})
		cur := 0
		open := false // a stretch without an ack is running since start
		var start, last time.Time
		for _, e := range evs {
			last = e.t
			if e.send {
				if !open {
					open, start = true, e.t
				}
				cur++
				continue
			}
			cur--
			if e.ack {
				out = append(out, Window{Partition: p, Start: start, End: e.t})
				open, start = cur > 0, e.t
			}
		}
		if open {
			out = append(out, Window{Partition: p, Start: start, End: last})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Len() != out[j].Len() {
			return out[i].Len() > out[j].Len()
		}
		return out[i].Start.Before(out[j].Start)
	})
	return out
}

// resumed checks that writes resumed after the faults: in every partition,
// some record sent after h.FaultsEnd was acknowledged. A partition that
// stopped taking writes for good otherwise passes (its writes fail, the
// replicas agree on what is there); so does one whose producers were
// blocked and sent nothing after the faults.
func resumed(h *History, r *Report) {
	if h.FaultsEnd.IsZero() {
		return
	}
	at := h.FaultsEnd.Sub(h.Start).Round(time.Millisecond)
	for p := int32(0); p < int32(h.Partitions); p++ {
		sent, acked := 0, 0
		for _, w := range h.Writes {
			if w.Partition != p || w.Sent.Before(h.FaultsEnd) {
				continue
			}
			sent++
			if w.Outcome == Acked {
				acked++
			}
		}
		switch {
		case sent == 0:
			r.add(Anomaly{Kind: WritesStalled, Partition: p, Offset: -1,
				Detail: fmt.Sprintf("no record was sent to the partition after the faults ended at t+%v (producers blocked?)", at)})
		case acked == 0:
			r.add(Anomaly{Kind: WritesStalled, Partition: p, Offset: -1,
				Detail: fmt.Sprintf("none of the %d records sent after the faults ended at t+%v was acknowledged: writes never resumed", sent, at)})
		}
	}
}

// writtenTo counts the writes sent to partition p.
func writtenTo(h *History, p int32) int {
	n := 0
	for _, w := range h.Writes {
		if w.Partition == p {
			n++
		}
	}
	return n
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// WriteText prints the report for people.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "records: %d produced, %d acknowledged, %d failed, %d indeterminate (%d of those + pending in the log), %d pending\n",
		r.Writes, r.Acked, r.Failed, r.Indeterminate, r.IndeterminatePresent, r.Pending)
	fmt.Fprintf(w, "reads: %d consumer reads; final log: %d records; in-sync replicas compared: %d\n", r.Reads, r.FinalRecords, r.ReplicasChecked)
	if r.Commits > 0 {
		fmt.Fprintf(w, "group commits: %d made, %d acknowledged; committed offsets read back and checked\n", r.Commits, r.CommitsAcked)
	}
	if r.Compacted {
		fmt.Fprintf(w, "compaction: %d acknowledged records removed by the log cleaner (%d superseded by a later record of their key, %d tombstones or deleted by one); %d offsets below the final HWs hold no record\n",
			r.CompactedAcked, r.CompactedSuperseded, r.CompactedDeleted, r.CompactedOffsets)
		if r.CompactedAcked == 0 {
			fmt.Fprintln(w, "WARNING: compaction removed no acknowledged record: the log cleaner never ran or found nothing to clean, so this run did not test compaction")
		}
	}
	if r.Members > 0 {
		fmt.Fprintf(w, "group members: %d sharing the partitions (leaving and joining again %d times, %d of them dying instead of leaving; stalling past the max poll interval %d times, %d of them leaving the group for it) read %d records (%d again after a handover); coverage of every final log checked\n",
			r.Members, r.MemberRejoins, r.MemberDeaths, r.MemberStalls, r.StallsLeft, r.MemberReads, r.MemberRereads)
	}
	if r.Rots > 0 {
		fmt.Fprintf(w, "scrub repairs: %d of %d rots, %d restarted in the node's process and %d by an exit (a sealed segment's batch damaged; the node's scrub found it and stopped the node, which truncated there at its restart and fetched the rest again)\n",
			r.ScrubRepairs, r.Rots, r.InProcessRepairs, r.ScrubRepairs-r.InProcessRepairs)
		for _, rp := range r.Repairs {
			fmt.Fprintf(w, "  fault #%d: node %d partition %d (batch at offset %d): ", rp.Rot.Fault, rp.Rot.Node, rp.Rot.Partition, rp.Rot.Offset)
			switch {
			case rp.By.Node == 0:
				fmt.Fprintln(w, "never found")
			case rp.By.InProcess:
				fmt.Fprintf(w, "restarted in its process at t+%v\n", rp.By.At.Sub(r.Start).Round(time.Millisecond))
			default:
				fmt.Fprintf(w, "exited at t+%v, started again by the nemesis\n", rp.By.At.Sub(r.Start).Round(time.Millisecond))
			}
		}
		if r.ScrubRepairs < r.Rots {
			fmt.Fprintf(w, "WARNING: %d rots never found by a scrub (a replica's files that still hold one fail the run as %s)\n", r.Rots-r.ScrubRepairs, ReplicaDivergence)
		}
	}
	fmt.Fprintf(w, "safety:")
	for _, k := range SafetyKinds {
		fmt.Fprintf(w, " %s=%d", k, r.Counts[k])
	}
	fmt.Fprintf(w, "\nliveness:")
	for _, k := range LivenessKinds {
		fmt.Fprintf(w, " %s=%d", k, r.Counts[k])
	}
	fmt.Fprintf(w, "\nlongest unavailability: %v\n", r.LongestUnavailability().Round(time.Millisecond))
	for _, win := range r.Windows {
		fmt.Fprintf(w, "  partition %d: %v from t+%v\n", win.Partition, win.Len().Round(time.Millisecond), win.Start.Sub(r.Start).Round(time.Millisecond))
	}
	for _, a := range r.Anomalies {
		fmt.Fprintf(w, "ANOMALY %s\n", a)
	}
	if r.OK() {
		fmt.Fprintln(w, "verdict: OK (no anomaly)")
	} else {
		fmt.Fprintf(w, "verdict: FAILED (%d safety anomalies)\n", r.SafetyViolations())
	}
}
