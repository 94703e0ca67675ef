package chaos

import (
	"fmt"
	"slices"
	"time"
)

// lastTruncation describes the last log truncation a member was told of in
// partition p, which stopped it there ("" if none).
func lastTruncation(h *History, p int32) string {
	for i := len(h.MemberDivergences) - 1; i >= 0; i-- {
		if d := h.MemberDivergences[i]; d.Partition == p {
			return fmt.Sprintf("; member %d was told at t+%v that the leader's log parts from what it read at offset %d "+
				"(its position %d, last fetched epoch %d; the leader's diverging epoch %d), and read no further there",
				d.Consumer, d.At.Sub(h.Start).Round(time.Millisecond), d.DivergingEndOffset, d.Position, d.LastFetchedEpoch, d.DivergingEpoch)
		}
	}
	return ""
}

// checkMembers holds the group members (members.go) to at-least-once
// delivery across every handover: for each partition, every record of the
// final log below the HW was read by some member (MemberSkipped: a
// partition handed to a member past an offset no member had read; or, once
// the members stopped short of the HW, MembersBehind), and every record a
// member read is the final log's record at that offset
// (InconsistentOffset). Two members reading the same records is allowed
// (a partition handed over resumes at the last commit). In a compacted
// run (cp not nil) a record the cleaner may have removed from the log a
// member read need not have been read (compaction.removable); what members
// read where the final log has nothing was compared in newCompaction.
func checkMembers(h *History, r *Report, cp *compaction) {
	if h.Members <= 0 {
		return
	}
	r.Members, r.MemberReads, r.MemberRejoins, r.MemberDeaths = h.Members, len(h.MemberReads), h.MemberRejoins, h.MemberDeaths
	r.MemberStalls, r.StallsLeft = h.MemberStalls, h.StallsLeft
	read := map[int32]map[int64]string{} // partition -> offset -> value
	for _, m := range h.MemberReads {
		if read[m.Partition] == nil {
			read[m.Partition] = map[int64]string{}
		}
		if _, again := read[m.Partition][m.Offset]; again {
			r.MemberRereads++
		}
		read[m.Partition][m.Offset] = m.text()
	}
	for _, pl := range h.Final {
		if pl.Err != "" {
			continue // reported unverified by Check
		}
		got := read[pl.Partition]
		var missing []int64
		top := int64(-1) // the highest offset a member read
		for o := range got {
			top = max(top, o)
		}
		for _, rec := range pl.Records {
			if rec.Offset >= pl.HW {
				break
			}
			v, ok := got[rec.Offset]
			switch {
			case !ok:
				missing = append(missing, rec.Offset)
			case v != rec.text():
				r.add(Anomaly{Kind: InconsistentOffset, Partition: pl.Partition, Offset: rec.Offset,
					Detail: fmt.Sprintf("a member of group %s read %q; the final log has %q", MembersGroup, clip(v), clip(rec.text()))})
			}
		}
		if cp != nil {
			missing = slices.DeleteFunc(missing, func(o int64) bool {
				_, _, req := cp.required(pl.Partition, o, o+1)
				return !req
			})
		}
		slices.Sort(missing)
		var skipped, behind []int64
		for _, o := range missing {
			if o < top {
				skipped = append(skipped, o)
			} else {
				behind = append(behind, o)
			}
		}
		if len(skipped) > 0 {
			r.add(Anomaly{Kind: MemberSkipped, Partition: pl.Partition, Offset: skipped[0],
				Detail: fmt.Sprintf("no member of group %s read %d records below offset %d that members read (first %d, last %d)",
					MembersGroup, len(skipped), top, skipped[0], skipped[len(skipped)-1])})
		}
		if len(behind) > 0 {
			r.add(Anomaly{Kind: MembersBehind, Partition: pl.Partition, Offset: behind[0],
				Detail: fmt.Sprintf("the members of group %s never read offsets %d to %d (the final HW is %d; the highest offset a member read is %d)%s",
					MembersGroup, behind[0], behind[len(behind)-1], pl.HW, top, lastTruncation(h, pl.Partition))})
		}
	}
}
