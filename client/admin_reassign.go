package client

import (
	"context"
	"fmt"
	"slices"

	"paymentlog/wire"
)

// ReassignPartition moves a partition onto the brokers in replicas (Kafka's
// AlterPartitionReassignments), in preference order: replicas[0] becomes the
// preferred leader. It returns once the reassignment is committed: the new
// replicas then copy the log from the leader, and the partition keeps its
// old replicas, in sync, until every new one is; WaitReassignment waits for
// that. replicas must name the topic's replication factor of distinct
// registered brokers (errors match wire.InvalidReplicationFactor and
// wire.InvalidRequest). A target already in place, or in progress, is
// accepted again, so a call retried after a lost answer succeeds.
func (a *Admin) ReassignPartition(ctx context.Context, topic string, partition int32, replicas []int32) error {
	if len(replicas) == 0 {
		return wire.InvalidRequest.Err("reassignment: no replicas given")
	}
	req := &wire.ReassignPartitionRequest{Topic: topic, Partition: partition, Replicas: replicas}
	var resp wire.ReassignPartitionResponse
	_, err := a.toController(ctx, "reassign partition", wire.TypeReassignPartition, req,
		func() any { resp = wire.ReassignPartitionResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	return err
}

// CancelReassignment undoes a partition's reassignment in progress: the
// replicas it added leave the partition (and delete their copies) and the
// original ones stay. Refused (wire.InvalidRequest) when none is in
// progress, e.g. because it has completed; a cancel retried after a lost
// answer whose first attempt took effect succeeds.
func (a *Admin) CancelReassignment(ctx context.Context, topic string, partition int32) error {
	before, err := a.partitionMetadata(ctx, topic, partition)
	if err != nil {
		return err
	}
	original := slices.DeleteFunc(slices.Clone(before.Replicas), func(r int32) bool { return slices.Contains(before.AddingReplicas, r) })
	req := &wire.ReassignPartitionRequest{Topic: topic, Partition: partition, Cancel: true}
	var resp wire.ReassignPartitionResponse
	unsure, err := a.toController(ctx, "cancel reassignment", wire.TypeReassignPartition, req,
		func() any { resp = wire.ReassignPartitionResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	if err != nil && unsure && resp.Err == wire.InvalidRequest && len(before.AddingReplicas)+len(before.RemovingReplicas) > 0 &&
		sameIDs(resp.Partition.Replicas, original) {
		return nil // an earlier attempt cancelled it
	}
	return err
}

// WaitReassignment waits until every node that answers shows the partition
// with no reassignment in progress, or ctx ends. progress, if not nil, is
// called with the partition's state whenever it changes.
func (a *Admin) WaitReassignment(ctx context.Context, topic string, partition int32, progress func(wire.PartitionMetadata)) error {
	var last *wire.PartitionMetadata
	return a.waitTopic(ctx, topic, func(t *wire.TopicMetadata) bool {
		if t == nil {
			return false
		}
		p, ok := findPartition(t.Partitions, partition)
		if !ok {
			return false
		}
		if progress != nil && (last == nil || p.PartitionEpoch > last.PartitionEpoch) {
			last = &p
			progress(p)
		}
		return len(p.AddingReplicas) == 0 && len(p.RemovingReplicas) == 0 && p.Leader >= 0
	})
}

// partitionMetadata returns a partition from fresh metadata.
func (a *Admin) partitionMetadata(ctx context.Context, topic string, partition int32) (wire.PartitionMetadata, error) {
	if err := a.c.meta.refresh(ctx); err != nil {
		return wire.PartitionMetadata{}, err
	}
	t, ok := a.c.meta.current().topics[topic]
	if ok {
		if p, ok := findPartition(t.Partitions, partition); ok {
			return p, nil
		}
	}
	return wire.PartitionMetadata{}, wire.UnknownTopicOrPartition.Err(fmt.Sprintf("%s-%d does not exist", topic, partition))
}

func findPartition(ps []wire.PartitionMetadata, partition int32) (wire.PartitionMetadata, bool) {
	for _, p := range ps {
		if p.Partition == partition {
			return p, true
		}
	}
	return wire.PartitionMetadata{}, false
}

// sameIDs compares two id sets, ignoring order.
func sameIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
