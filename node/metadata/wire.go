package metadata

import (
	"maps"
	"slices"

	"paymentlog/wire"
)

// Broker states in wire.BrokerInfo.State.
const (
	StateAlive  = "alive"
	StateFenced = "fenced"
)

// BrokerInfos lists every broker for the wire, sorted by id.
func (m *Image) BrokerInfos() []wire.BrokerInfo {
	bs := m.Brokers()
	out := make([]wire.BrokerInfo, 0, len(bs))
	for _, b := range bs {
		st := StateAlive
		if b.Fenced {
			st = StateFenced
		}
		out = append(out, wire.BrokerInfo{ID: b.ID, Addr: b.Addr, State: st,
			ControllerEligible: b.ControllerEligible, Incarnation: b.Incarnation, FencedAt: b.CatchUpOffset,
			MetadataVersion: versionOf(b.MetadataVersion), Rack: b.Rack})
	}
	return out
}

// PartitionMetadata converts a partition; HighWatermark and LogStartOffset are
// -1 (only the partition's leader knows them).
func (p PartitionState) PartitionMetadata() wire.PartitionMetadata {
	return wire.PartitionMetadata{
		Partition: p.Partition, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
		PartitionEpoch: p.PartitionEpoch, Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR),
		ELR: slices.Clone(p.ELR), HighWatermark: -1, LogStartOffset: -1,
		AddingReplicas: slices.Clone(p.Adding), RemovingReplicas: slices.Clone(p.Removing),
		LostReplicas: slices.Clone(p.Lost),
	}
}

// TopicMetadata converts a topic.
func (t TopicState) TopicMetadata() wire.TopicMetadata {
	tm := wire.TopicMetadata{Name: t.Name, ID: t.ID, ReplicationFactor: t.RF, MinISR: t.MinISR,
		Partitions: make([]wire.PartitionMetadata, 0, len(t.Partitions)), Configs: maps.Clone(t.Configs)}
	for _, p := range t.Partitions {
		tm.Partitions = append(tm.Partitions, p.PartitionMetadata())
	}
	return tm
}

// MetadataResponse answers a MetadataRequest for topics (every topic when
// empty). Unknown topics carry UnknownTopicOrPartition. ControllerID is the
// image's; the caller may overwrite it with the live raft leader.
func (m *Image) MetadataResponse(topics []string) wire.MetadataResponse {
	r := wire.MetadataResponse{ControllerID: m.controllerID, MetadataOffset: int64(m.offset),
		Brokers: m.BrokerInfos(), Topics: []wire.TopicMetadata{}}
	cluster := m.clusterConfigs
	if len(topics) == 0 {
		topics = m.TopicNames()
	}
	for _, name := range topics {
		t, ok := m.Topic(name)
		if !ok {
			r.Topics = append(r.Topics, wire.TopicMetadata{Err: wire.UnknownTopicOrPartition, Name: name})
			continue
		}
		tm := t.TopicMetadata()
		tm.MaxMessageBytes = int32(min(t.Messages(cluster).MaxBytes, MaxSegmentBytes))
		r.Topics = append(r.Topics, tm)
	}
	return r
}

// DescribeClusterResponse answers a DescribeClusterRequest; ControllerID as in
// MetadataResponse.
func (m *Image) DescribeClusterResponse() wire.DescribeClusterResponse {
	return wire.DescribeClusterResponse{ControllerID: m.controllerID, MetadataOffset: int64(m.offset),
		Brokers: m.BrokerInfos(), Configs: m.ClusterConfigs(), MetadataVersion: m.metadataVersion}
}
