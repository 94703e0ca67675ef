package chaos

import (
	"fmt"
	"slices"
)

// checkMembers holds the group members (members.go) to at-least-once
// delivery across every handover: for each partition, every record of the
// final log below the HW was read by some member (MemberSkipped: a
// partition handed to a member past an offset no member had read; or, once
// the members stopped short of the HW, MembersBehind), and every record a
// member read is the final log's record at that offset
// (InconsistentOffset). Two members reading the same records is allowed
// (a partition handed over resumes at the last commit).
func checkMembers(h *History, r *Report) {
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
		read[m.Partition][m.Offset] = m.Value
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
			case v != rec.Value:
				r.add(Anomaly{Kind: InconsistentOffset, Partition: pl.Partition, Offset: rec.Offset,
					Detail: fmt.Sprintf("a member of group %s read %q; the final log has %q", MembersGroup, clip(v), clip(rec.Value))})
			}
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
				Detail: fmt.Sprintf("the members of group %s never read offsets %d to %d (the final HW is %d)",
					MembersGroup, behind[0], behind[len(behind)-1], pl.HW)})
		}
	}
}
