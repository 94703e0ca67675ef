package metadata

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"paymentlog/wire"
)

// Consumer groups' committed offsets (Kafka's OffsetCommit, without group
// membership; wire/group_offsets.go) live in the image: the active
// controller decides a commit into a GroupOffsetsCommitted record, so the
// offsets are replicated, survive controller failover, and are in every
// snapshot. A group exists from its first commit until GroupDeleted removes
// it: on request, or when it has not committed for the cluster config
// offsets.retention.ms (7 days by default; DecideExpireGroups).
//
// Offsets belong to a topic incarnation: a commit names the topic id, and
// deleting the topic removes its offsets from every group (the group stays,
// maybe with none, until it is deleted or expires).
//
// Every commit is one metadata log entry applied by every node, so this
// fits commits every few seconds per consumer, not thousands a second.

// GroupOffsetsCommitted (record type 14, metadata version 4) sets committed
// offsets of one group, creating the group with its first commit. It
// applies when the group name is valid, every offset names an existing
// partition of the topic incarnation TopicID, no partition is named twice,
// offsets are >= 0, leader epochs >= -1, metadata within
// wire.MaxOffsetMetadataLen, and a new group does not exceed wire.MaxGroups.
type GroupOffsetsCommitted struct {
	Group   string              `msgpack:"g"`
	TimeMs  int64               `msgpack:"ts"` // the controller's clock, Unix ms
	Offsets []GroupOffsetRecord `msgpack:"o"`
}

// GroupOffsetRecord is one partition's offset in a GroupOffsetsCommitted.
type GroupOffsetRecord struct {
	Topic       string `msgpack:"t"`
	TopicID     string `msgpack:"tid"`
	Partition   int32  `msgpack:"p"`
	Offset      int64  `msgpack:"o"`
	LeaderEpoch int32  `msgpack:"e"`
	Metadata    string `msgpack:"m,omitempty"`
}

// GroupDeleted (record type 15, metadata version 4) removes a group and its
// offsets. It applies when the group exists.
type GroupDeleted struct {
	Group string `msgpack:"g"`
	// Expired is set when retention removed it (for logs and log dumps).
	Expired bool `msgpack:"exp,omitempty"`
}

// Record types of the group records. Part of the format: never renumber.
const (
	TypeGroupOffsetsCommitted RecordType = 14
	TypeGroupDeleted          RecordType = 15
)

func (GroupOffsetsCommitted) Type() RecordType { return TypeGroupOffsetsCommitted }
func (GroupOffsetsCommitted) Version() uint8   { return 1 }
func (GroupDeleted) Type() RecordType          { return TypeGroupDeleted }
func (GroupDeleted) Version() uint8            { return 1 }

func init() {
	typeNames[TypeGroupOffsetsCommitted] = "GroupOffsetsCommitted"
	typeNames[TypeGroupDeleted] = "GroupDeleted"
}

// groupsVersion is the metadata version of the group records.
const groupsVersion = 4

// ConfigOffsetsRetention is the cluster config that sets how long a group
// that no longer commits keeps its offsets, in ms (-1: forever).
const ConfigOffsetsRetention = "offsets.retention.ms"

// DefaultOffsetsRetentionMs is offsets.retention.ms when not set: 7 days,
// Kafka's default.
const DefaultOffsetsRetentionMs int64 = 7 * 24 * 3600 * 1000

// GroupPartition names one partition of a group's offsets.
type GroupPartition struct {
	Topic     string
	Partition int32
}

// GroupOffset is one partition's committed offset.
type GroupOffset struct {
	TopicID      string
	Offset       int64
	LeaderEpoch  int32
	Metadata     string
	CommitTimeMs int64
}

// GroupState is one group. Offsets is read-only (shared between images).
type GroupState struct {
	Name         string
	LastCommitMs int64
	Offsets      map[GroupPartition]GroupOffset
}

// SortedOffsets returns the group's partitions sorted by topic and
// partition.
func (g GroupState) SortedOffsets() []GroupPartition {
	out := slices.Collect(maps.Keys(g.Offsets))
	slices.SortFunc(out, func(a, b GroupPartition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// Group returns one group.
func (m *Image) Group(name string) (GroupState, bool) {
	g, ok := m.groups[name]
	if !ok {
		return GroupState{}, false
	}
	return *g, true
}

// GroupCount is the number of groups.
func (m *Image) GroupCount() int { return len(m.groups) }

// Groups returns every group, sorted by name.
func (m *Image) Groups() []GroupState {
	out := make([]GroupState, 0, len(m.groups))
	for _, n := range slices.Sorted(maps.Keys(m.groups)) {
		out = append(out, *m.groups[n])
	}
	return out
}

// OffsetsRetentionMs returns offsets.retention.ms (the default when not
// set; -1: forever).
func (m *Image) OffsetsRetentionMs() int64 {
	if n, ok := configInt(m.clusterConfigs, ConfigOffsetsRetention); ok {
		return n
	}
	return DefaultOffsetsRetentionMs
}

// validateOffsetsRetention checks a value of offsets.retention.ms.
func validateOffsetsRetention(v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || (n < 1 && n != -1) {
		return fmt.Errorf("config %s: want milliseconds, an integer >= 1 or -1 (forever), got %q", ConfigOffsetsRetention, v)
	}
	return nil
}

// mutableGroup returns a group private to this entry (creating it).
func (b *builder) mutableGroup(name string) *GroupState {
	if !b.groupsOwned {
		b.next.groups = maps.Clone(b.next.groups)
		b.groupsOwned = true
		b.ownedGroups = map[string]bool{}
	}
	if b.next.groups == nil { // none yet, or the last one deleted in this entry
		b.next.groups = map[string]*GroupState{}
	}
	g := b.next.groups[name]
	if b.ownedGroups[name] {
		return g
	}
	ng := &GroupState{Name: name, Offsets: map[GroupPartition]GroupOffset{}}
	if g != nil {
		ng.LastCommitMs = g.LastCommitMs
		ng.Offsets = maps.Clone(g.Offsets)
	}
	b.next.groups[name] = ng
	b.ownedGroups[name] = true
	return ng
}

// applyGroupOffsetsCommitted applies r; it returns a non-empty reason when
// rejected.
func (b *builder) applyGroupOffsetsCommitted(r GroupOffsetsCommitted) string {
	if why := wire.CheckGroupName(r.Group); why != "" {
		return why
	}
	if len(r.Offsets) == 0 || len(r.Offsets) > wire.MaxCommitOffsets {
		return fmt.Sprintf("%d offsets", len(r.Offsets))
	}
	if r.TimeMs < 0 {
		return "negative commit time"
	}
	if _, ok := b.next.groups[r.Group]; !ok && len(b.next.groups) >= wire.MaxGroups {
		return "too many groups"
	}
	seen := make(map[GroupPartition]bool, len(r.Offsets))
	for _, o := range r.Offsets {
		if why := checkGroupOffsetIn(b.next.topics, o); why != "" {
			return why
		}
		k := GroupPartition{o.Topic, o.Partition}
		if seen[k] {
			return fmt.Sprintf("partition %s-%d named twice", o.Topic, o.Partition)
		}
		seen[k] = true
	}
	g := b.mutableGroup(r.Group)
	g.LastCommitMs = max(g.LastCommitMs, r.TimeMs)
	for _, o := range r.Offsets {
		g.Offsets[GroupPartition{o.Topic, o.Partition}] = GroupOffset{TopicID: o.TopicID, Offset: o.Offset,
			LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: r.TimeMs}
	}
	b.useVersion(groupsVersion)
	return ""
}

// checkGroupOffsetIn says why o cannot be held by an image with topics.
func checkGroupOffsetIn(topics map[string]*TopicState, o GroupOffsetRecord) string {
	t, ok := topics[o.Topic]
	switch {
	case !ok || t.ID != o.TopicID:
		return fmt.Sprintf("no topic %.128q with id %.64q", o.Topic, o.TopicID)
	case o.Partition < 0 || int(o.Partition) >= len(t.Partitions):
		return fmt.Sprintf("no partition %s-%d", o.Topic, o.Partition)
	case o.Offset < 0:
		return "negative offset"
	case o.LeaderEpoch < -1:
		return "leader epoch below -1"
	case len(o.Metadata) > wire.MaxOffsetMetadataLen:
		return "offset metadata too long"
	}
	return ""
}

// applyGroupDeleted applies r; it returns a non-empty reason when rejected.
func (b *builder) applyGroupDeleted(r GroupDeleted) string {
	if _, ok := b.next.groups[r.Group]; !ok {
		return "no such group"
	}
	b.mutableGroup(r.Group)
	delete(b.next.groups, r.Group)
	delete(b.ownedGroups, r.Group)
	if len(b.next.groups) == 0 {
		b.next.groups = nil // as an image without groups, and its snapshot, hold
	}
	b.useVersion(groupsVersion)
	return ""
}

// dropTopicOffsets removes the deleted topic incarnation's offsets from
// every group.
func (b *builder) dropTopicOffsets(topic, id string) {
	// The order does not matter (each group changes alone), and mutableGroup
	// only replaces existing keys or clones the map being ranged over.
	for n, cur := range b.next.groups {
		has := false
		for k, o := range cur.Offsets {
			if k.Topic == topic && o.TopicID == id {
				has = true
				break
			}
		}
		if !has {
			continue
		}
		g := b.mutableGroup(n)
		for k, o := range g.Offsets {
			if k.Topic == topic && o.TopicID == id {
				delete(g.Offsets, k)
			}
		}
	}
}

// formatGroupOffsetsCommitted renders r on one line.
func formatGroupOffsetsCommitted(r GroupOffsetsCommitted) string {
	s := fmt.Sprintf("GroupOffsetsCommitted %s ts=%d", r.Group, r.TimeMs)
	for _, o := range r.Offsets {
		s += fmt.Sprintf(" %s-%d=%d", o.Topic, o.Partition, o.Offset)
		if o.LeaderEpoch >= 0 {
			s += fmt.Sprintf("@%d", o.LeaderEpoch)
		}
	}
	return s
}
