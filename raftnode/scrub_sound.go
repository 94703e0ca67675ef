package raftnode

// When may a repair skip the guard? Only when it took out nothing this node
// acknowledged. A voter acknowledges an entry once it is in its log on disk
// (and the log fails at the scrub's find: nothing is appended after), so
// nothing acknowledged is lost exactly when the repaired log still holds
// the last entry it held when the scrub stopped the node: that index with
// that term (scrubLogEndFile). By raft's log matching, two logs holding an
// entry of the same index and term hold the same entries up to it; and
// each batch the open kept passed its CRC.
//
// "The segment checks out now" (segment's re-check finding no bad batch,
// Log.TornAtOpen false) is not that proof, and is not used:
//
//   - a batch whose header rotted to zeros in the active segment (a
//     zeroed sector) looks to the open like the end of the data: it
//     truncates there, everything after it included, and reports no tear;
//   - a file re-written meanwhile (an operator copying another node's
//     segment, or restoring a backup) can check out and hold fewer entries,
//     or others.
//
// What the re-check reads: after the in-process restart, the same file
// through a new mapping, so a page rotten in the page cache is still rotten
// there (the repair truncates at it, and guards); a sound read means the
// page was re-read from the disk, sound, or the bad read never touched the
// file (memory or CPU). The metadata log is written with an fsync per
// Ready (SyncAlways), so a page holding an acknowledged entry is on the
// disk; rot in a page not yet written back is written back rotten and found
// again. Rot on the disk under a sound cached page is not found by this
// scrub either: a later pass finds it, and repairs under the guard then.
// Missing knowledge (no record: a failed write, a crash before it, an older
// build) keeps the guard. What stays unproven is a log spliced from parts
// of different ages of this node's own files (a partial restore of old
// segments): no check of the log end can see that, guard or not.

// lostNothing reports whether the repaired log st still ends at the entry
// it ended at when the scrub stopped the node (see above): the guard is
// then not needed. A log cut below its snapshot and restarted after it
// (loadLog) may: the snapshot holds those entries.
func (r *scrubRepair) lostNothing(st *diskStorage) bool {
	if !r.known || st.lastIndex() != r.end.index {
		return false
	}
	term, err := st.Term(r.end.index)
	return err == nil && term == r.end.term
}

// keptWhole reports whether the repaired log (sl, st) also starts where it
// did: it holds every entry it held, and the repair's copy of them is
// redundant.
func (r *scrubRepair) keptWhole(st *diskStorage, sl *segmentLog) bool {
	return r.lostNothing(st) && sl.Start() == r.end.start
}
