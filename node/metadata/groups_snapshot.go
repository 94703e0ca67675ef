package metadata

import (
	"fmt"

	"paymentlog/wire"
)

// Consumer groups in snapshots (snapshotV1.Groups; groups.go).

// snapGroup is one group in a snapshot; offsets sorted by topic and
// partition.
type snapGroup struct {
	Name         string            `msgpack:"name"`
	LastCommitMs int64             `msgpack:"last"`
	Offsets      []snapGroupOffset `msgpack:"offsets"`
}

type snapGroupOffset struct {
	Topic        string `msgpack:"t"`
	TopicID      string `msgpack:"tid"`
	Partition    int32  `msgpack:"p"`
	Offset       int64  `msgpack:"o"`
	LeaderEpoch  int32  `msgpack:"e"`
	Metadata     string `msgpack:"m,omitempty"`
	CommitTimeMs int64  `msgpack:"ts"`
}

func (o snapGroupOffset) record() GroupOffsetRecord {
	return GroupOffsetRecord{Topic: o.Topic, TopicID: o.TopicID, Partition: o.Partition, Offset: o.Offset,
		LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata}
}

// snapGroups encodes the image's groups.
func (m *Image) snapGroups() []snapGroup {
	var out []snapGroup
	for _, g := range m.Groups() {
		sg := snapGroup{Name: g.Name, LastCommitMs: g.LastCommitMs, Offsets: make([]snapGroupOffset, 0, len(g.Offsets))}
		for _, k := range g.SortedOffsets() {
			o := g.Offsets[k]
			sg.Offsets = append(sg.Offsets, snapGroupOffset{Topic: k.Topic, TopicID: o.TopicID, Partition: k.Partition,
				Offset: o.Offset, LeaderEpoch: o.LeaderEpoch, Metadata: o.Metadata, CommitTimeMs: o.CommitTimeMs})
		}
		out = append(out, sg)
	}
	return out
}

// loadSnapGroups decodes a snapshot's groups into m, whose topics are
// already loaded, checking every invariant.
func (m *Image) loadSnapGroups(gs []snapGroup) error {
	if len(gs) > wire.MaxGroups {
		return fmt.Errorf("%d groups", len(gs))
	}
	for i, sg := range gs {
		if why := wire.CheckGroupName(sg.Name); why != "" {
			return fmt.Errorf("group %d: %s", i, why)
		}
		if i > 0 && sg.Name <= gs[i-1].Name {
			return fmt.Errorf("groups not sorted or repeated at %q", sg.Name)
		}
		if sg.LastCommitMs < 0 {
			return fmt.Errorf("group %s: negative commit time", sg.Name)
		}
		g := &GroupState{Name: sg.Name, LastCommitMs: sg.LastCommitMs, Offsets: make(map[GroupPartition]GroupOffset, len(sg.Offsets))}
		for _, so := range sg.Offsets {
			if why := checkGroupOffsetIn(m.topics, so.record()); why != "" {
				return fmt.Errorf("group %s: %s", sg.Name, why)
			}
			k := GroupPartition{so.Topic, so.Partition}
			if _, dup := g.Offsets[k]; dup {
				return fmt.Errorf("group %s: partition %s-%d repeated", sg.Name, so.Topic, so.Partition)
			}
			if so.CommitTimeMs < 0 || so.CommitTimeMs > sg.LastCommitMs {
				return fmt.Errorf("group %s: commit time %d of %s-%d outside 0..%d", sg.Name, so.CommitTimeMs, so.Topic, so.Partition, sg.LastCommitMs)
			}
			g.Offsets[k] = GroupOffset{TopicID: so.TopicID, Offset: so.Offset, LeaderEpoch: so.LeaderEpoch,
				Metadata: so.Metadata, CommitTimeMs: so.CommitTimeMs}
		}
		if m.groups == nil {
			m.groups = map[string]*GroupState{}
		}
		m.groups[sg.Name] = g
	}
	return nil
}
