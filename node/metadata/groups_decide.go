package metadata

import (
	"maps"
	"slices"

	"paymentlog/wire"
)

// The active controller's decisions on consumer groups (groups.go).

// CommitOffsetsEvent asks to commit offsets for a group at NowMs (the
// controller's clock).
type CommitOffsetsEvent struct {
	Group   string
	Offsets []wire.GroupOffset
	NowMs   int64
}

// DecideCommitOffsets returns the GroupOffsetsCommitted that stores
// ev.Offsets, with each offset's TopicID set to the topic's current id
// where the request left it empty. Refusals are those of
// wire.OffsetCommitRequest.
func DecideCommitOffsets(img *Image, ev CommitOffsetsEvent) ([]Record, error) {
	topic := func(name string) (string, int32, bool) {
		t, ok := img.topics[name]
		if !ok {
			return "", 0, false
		}
		return t.ID, int32(len(t.Partitions)), true
	}
	if e := wire.CheckOffsetCommit(&wire.OffsetCommitRequest{Group: ev.Group, Offsets: ev.Offsets}, topic); e != nil {
		return nil, e
	}
	rec := GroupOffsetsCommitted{Group: ev.Group, TimeMs: ev.NowMs, Offsets: make([]GroupOffsetRecord, 0, len(ev.Offsets))}
	for _, o := range ev.Offsets {
		rec.Offsets = append(rec.Offsets, GroupOffsetRecord{Topic: o.Topic, TopicID: img.topics[o.Topic].ID, Partition: o.Partition,
			Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata})
	}
	if _, ok := img.groups[ev.Group]; !ok && len(img.groups) >= wire.MaxGroups {
		return nil, werr(wire.InvalidRequest, "the cluster has %d groups, the most it holds: delete groups no longer used", len(img.groups))
	}
	if err := requireVersion(img, groupsVersion, "committing group offsets"); err != nil {
		return nil, err
	}
	return []Record{rec}, nil
}

// DecideDeleteGroup returns the GroupDeleted that removes group: refused
// with InvalidGroupID for a bad name and GroupIDNotFound for a group that
// does not exist.
func DecideDeleteGroup(img *Image, group string) ([]Record, error) {
	if why := wire.CheckGroupName(group); why != "" {
		return nil, werr(wire.InvalidGroupID, "%s", why)
	}
	if _, ok := img.groups[group]; !ok {
		return nil, werr(wire.GroupIDNotFound, "group %s does not exist", group)
	}
	return []Record{GroupDeleted{Group: group}}, nil
}

// maxExpirePerDecision bounds the groups one expiry decision deletes (the
// next one takes the rest).
const maxExpirePerDecision = 1000

// DecideExpireGroups returns a GroupDeleted (Expired) for every group whose
// latest commit is older than offsets.retention.ms at nowMs, at most
// maxExpirePerDecision of them; none while retention is -1.
func DecideExpireGroups(img *Image, nowMs int64) []Record {
	ret := img.OffsetsRetentionMs()
	if ret < 0 || len(img.groups) == 0 {
		return nil
	}
	var out []Record
	for _, n := range slices.Sorted(maps.Keys(img.groups)) {
		if g := img.groups[n]; nowMs-g.LastCommitMs > ret {
			out = append(out, GroupDeleted{Group: n, Expired: true})
			if len(out) == maxExpirePerDecision {
				break
			}
		}
	}
	return out
}
