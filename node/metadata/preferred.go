package metadata

// Preferred-leader election: a partition whose leadership moved away from
// its preferred replica (Replicas[0]: a fence, a controlled shutdown, a
// reassignment) gets it back once that replica is live and in the ISR
// again. The move is a clean election (the ISR is unchanged, the leader
// epoch bumped), so it is always safe; but it costs the writers a stall
// (requests in flight to the old leader refused, its uncommitted tail
// truncated and resent, clients refreshing their metadata), which is
// larger when the new leader has not settled yet. So the controller waits
// (node/controller/preferred.go) and passes this package a ready rule.

// PreferredWaiting reports whether p's preferred replica is live and in the
// ISR but does not lead: preferred-leader election would move p to it.
func PreferredWaiting(img *Image, p PartitionState) bool {
	pref := p.Preferred()
	return pref != NoLeader && p.Leader != pref && p.InISR(pref) && img.Live(pref)
}

// DecidePreferredLeadersIf moves leadership back to the preferred replica of
// each partition that is PreferredWaiting and for which ready holds (nil:
// every one).
func DecidePreferredLeadersIf(img *Image, ready func(PartitionState) bool) []Record {
	var out []Record
	img.EachPartition(func(p PartitionState) bool {
		if PreferredWaiting(img, p) && (ready == nil || ready(p)) {
			c, _ := changeTo(p, p.ISR, p.Preferred(), p.ELR)
			out = append(out, c)
		}
		return true
	})
	return out
}
