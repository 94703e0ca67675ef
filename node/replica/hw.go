package replica

// NextHW is the high watermark rule as a pure function.
//
// cur is the current HW; leos holds the log end offset of every member of the
// effective ISR (the committed ISR, or during a pending change the larger of
// the committed and the proposed set, leader included); an unknown LEO is -1.
// minISR is the partition's minimum ISR.
//
// The result is the smallest LEO in leos if that is above cur and the set has
// at least minISR members; otherwise cur. The HW never decreases, and never
// advances while fewer than minISR replicas would hold the records.
func NextHW(cur int64, leos []int64, minISR int) int64 {
	if len(leos) == 0 || len(leos) < minISR {
		return cur
	}
	m := leos[0]
	for _, l := range leos[1:] {
		m = min(m, l)
	}
	return max(cur, m)
}
