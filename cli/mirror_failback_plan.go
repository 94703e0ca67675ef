package cli

import (
	"fmt"
	"slices"

	"paymentlog/client"
	"paymentlog/wire"
)

// Failing a consumer group back (MirrorMaker 2's translation of a remote
// topic's offsets to its upstream ones, RemoteClusterUtils.translateOffsets
// and the checkpoints of remote topics): after a fail-over the group
// consumed the copy on the target (eu1.payments on us1) up to some offset;
// once the source (eu1) is back, its offsets of the original (payments on
// eu1) must be where it stopped. planFailback is the pure rule, `mirror
// failback-offsets` (mirror_failback.go) reads and commits.

// failbackPartition is one partition of a group's committed offsets on a
// copy, mapped back onto the original topic on the source.
type failbackPartition struct {
	// copy is the partition on the target the group consumed; tp is its
	// original on the source, whose offset is committed.
	copy, tp client.TopicPartition
	at       int64 // the group's offset of copy on the target
	before   int64 // its offset of tp on the source; -1: none
	// copyID is the incarnation of the copy the group's offset is of.
	copyID string
	// found is the source offset the group consumed everything below,
	// by the syncs (syncMap.untranslate) or the copy's mirror headers
	// (mirror_failback.go): the fail-back before it is placed; -1: none.
	found int64
	// syncTarget is the target offset of the sync found was taken from
	// (-1: none): the header read starts there.
	syncTarget int64
	// offset is the fail-back: found, clamped to the source partition's
	// log start and end; -1: none.
	offset int64
	// src is the source partition: its incarnation (the commit names
	// it), log start and high watermark.
	src targetPartition
	// note says why the fail-back is not committed; "" when it is (or
	// when the source group is there already: offset == before).
	note string
	// info says something of a fail-back committed (clamped); "" when
	// there is nothing to say.
	info string
}

// commits reports whether the fail-back is to be committed.
func (f failbackPartition) commits() bool {
	return f.note == "" && f.offset >= 0 && f.offset != f.before
}

// where names the partition in notes: tp, and the copy when the policy
// renamed it.
func (f failbackPartition) where() string {
	if f.copy.Topic == f.tp.Topic {
		return f.tp.String()
	}
	return fmt.Sprintf("%s (from %s on the target)", f.tp, f.copy)
}

// planFailback maps a group's committed offsets on the target (copyOffs)
// back onto the source topics named by policy, sorted by source topic and
// partition, given its committed offsets on the source (srcOffs), the
// offset syncs, and the source partitions (by source partition: ID, log
// start, high watermark). Offsets of topics that are not copies by the
// policy (with prefix, names without the source alias) are left out; the
// names of their topics are returned.
//
// The group at copy offset T goes to the source offset of the sync at or
// below T with the greatest source offset (syncMap.untranslate), in the
// incarnation of the copy its offset names: it consumed every record
// below that, and may read some of the copy's last records again on the
// source, never misses one. Then, on the source partition:
//   - past its high watermark (the source lost records the copy has, which
//     were never replicated there before it failed, or was truncated): the
//     high watermark, said in info; the records the group consumed on the
//     copy past it are gone from the source.
//   - below its log start (retention deleted records there since): the log
//     start, said in info; the records between were never consumed by the
//     group and are lost to it.
//   - below the group's own offset on the source (it consumed further
//     there, before the fail-over, or after the fail-back): not committed,
//     unless rewind (MirrorMaker 2 never moves a group back).
func planFailback(copyOffs, srcOffs []wire.GroupOffset, syncs *syncMap, sources map[client.TopicPartition]targetPartition,
	policy replicationPolicy, rewind bool) (plan []failbackPartition, notCopies []string) {
	before := map[client.TopicPartition]int64{}
	for _, o := range srcOffs {
		before[client.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	}
	for _, o := range copyOffs {
		topic, ok := policy.sourceTopic(o.Topic)
		if !ok {
			if !slices.Contains(notCopies, o.Topic) {
				notCopies = append(notCopies, o.Topic)
			}
			continue
		}
		f := failbackPartition{copy: client.TopicPartition{Topic: o.Topic, Partition: o.Partition},
			tp: client.TopicPartition{Topic: topic, Partition: o.Partition}, at: o.Offset, before: -1, copyID: o.TopicID,
			found: -1, syncTarget: -1, offset: -1}
		if b, ok := before[f.tp]; ok {
			f.before = b
		}
		plan = append(plan, f.bySyncs(syncs, sources, rewind))
	}
	slices.SortFunc(plan, func(a, b failbackPartition) int { return compareTP(a.tp, b.tp) })
	slices.Sort(notCopies)
	return plan, notCopies
}

// bySyncs finds f's fail-back by the syncs of the copy's incarnation,
// and places it on the source partition.
func (f failbackPartition) bySyncs(syncs *syncMap, sources map[client.TopicPartition]targetPartition, rewind bool) failbackPartition {
	src, ok := sources[f.tp]
	if !ok {
		f.note = fmt.Sprintf("%s: no such partition on the source", f.where())
		return f
	}
	f.src = src
	s, ok := syncs.untranslate(f.tp, f.copyID, f.at)
	if !ok || f.copyID == "" { // every offset the controller keeps names its topic's ID
		f.note = fmt.Sprintf("%s: no offset sync at or below the group's offset %d of the copy (not a copy this mirror made, mirrored without offset syncs, "+
			"or the group consumed none of it)", f.where(), f.at)
		return f
	}
	f.syncTarget = s.target
	return f.place(s.source, rewind)
}

// place makes source, an offset the group consumed every record below,
// f's fail-back if it is past the one found so far, clamped to the
// source partition's high watermark and log start, and decides whether
// it is committed.
func (f failbackPartition) place(source int64, rewind bool) failbackPartition {
	if source <= f.found {
		return f
	}
	f.found, f.note, f.info = source, "", ""
	switch {
	case f.src.logStart < 0 || f.src.end < 0:
		f.note = fmt.Sprintf("%s: the source partition's log start or end is unknown (no leader answered): not failed back", f.where())
		return f
	case source > f.src.end:
		f.info = fmt.Sprintf("%s: copy offset %d fails back to source offset %d, past the source's log end %d (the source lost records the copy has, "+
			"or was truncated; the group consumed them on the copy): committing %d", f.where(), f.at, source, f.src.end, f.src.end)
		f.offset = f.src.end
	case source < f.src.logStart:
		f.info = fmt.Sprintf("%s: copy offset %d fails back to source offset %d, below the source's log start %d (retention deleted the records there, "+
			"which the group never consumed): committing %d", f.where(), f.at, source, f.src.logStart, f.src.logStart)
		f.offset = f.src.logStart
	default:
		f.offset = source
	}
	if f.before > f.offset && !rewind {
		f.note = fmt.Sprintf("%s: the group is at %d on the source, past the fail-back %d of copy offset %d: not moved back (--rewind moves it)",
			f.where(), f.before, f.offset, f.at)
	}
	return f
}

// failbackCommits are the offsets of plan to commit on the source.
func failbackCommits(plan []failbackPartition) []wire.GroupOffset {
	var out []wire.GroupOffset
	for _, f := range plan {
		if f.commits() {
			out = append(out, wire.GroupOffset{Topic: f.tp.Topic, TopicID: f.src.topicID, Partition: f.tp.Partition, Offset: f.offset, LeaderEpoch: -1,
				Metadata: fmt.Sprintf("paymentlog mirror: failed back from %s offset %d", f.copy, f.at)})
		}
	}
	return out
}
