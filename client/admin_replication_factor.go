package client

import (
	"context"
	"fmt"

	"paymentlog/wire"
)

// AlterReplicationFactor gives every partition of topic rf replicas (and the
// topic rf for partitions added later) through the active controller. It
// returns once the change is committed: added replicas then copy the log
// from their leaders and the partitions keep their replicas in sync
// meanwhile; WaitReplicationFactor waits for them all. Replicas are
// removed once those kept are in sync. Refused: rf outside 1-16, below the
// topic's min ISR, or above the live brokers (wire.InvalidReplicationFactor);
// a partition with no in-sync replica (wire.IneligibleReplica); an unknown
// topic (wire.UnknownTopicOrPartition). A call retried after a lost answer
// finds its change in place and succeeds.
func (a *Admin) AlterReplicationFactor(ctx context.Context, topic string, rf int32) error {
	return a.alterReplicationFactor(ctx, topic, rf, nil)
}

// AlterReplicationFactorAssigned is AlterReplicationFactor with every
// partition's new replicas given (assignment[i] for partition i, all of one
// size, the new replication factor), as a reassignment plan that changes
// the count does: one change, with no replica picked and then moved again.
func (a *Admin) AlterReplicationFactorAssigned(ctx context.Context, topic string, assignment [][]int32) error {
	if len(assignment) == 0 {
		return wire.InvalidRequest.Err("an assignment of no partitions")
	}
	return a.alterReplicationFactor(ctx, topic, int32(len(assignment[0])), assignment)
}

func (a *Admin) alterReplicationFactor(ctx context.Context, topic string, rf int32, assignment [][]int32) error {
	if rf < 1 {
		return wire.InvalidReplicationFactor.Err(fmt.Sprintf("replication factor %d: must be at least 1", rf))
	}
	req := &wire.AlterReplicationFactorRequest{Topic: topic, ReplicationFactor: rf, Assignment: assignment}
	var resp wire.AlterReplicationFactorResponse
	_, err := a.toController(ctx, "alter replication factor", wire.TypeAlterReplicationFactor, req,
		func() any { resp = wire.AlterReplicationFactorResponse{}; return &resp },
		func() (wire.ErrorCode, string) { return resp.Err, resp.Message })
	return err
}

// WaitReplicationFactor waits until every node that answers shows every
// partition of topic with rf replicas, no reassignment in progress and a
// leader, or ctx ends. progress, if not nil, is called with the number of
// such partitions whenever a node shows more than it was last called with.
func (a *Admin) WaitReplicationFactor(ctx context.Context, topic string, rf int32, progress func(done, total int)) error {
	last := -1
	return a.waitTopic(ctx, topic, func(t *wire.TopicMetadata) bool {
		if t == nil {
			return false
		}
		done := 0
		for _, p := range t.Partitions {
			if len(p.Replicas) == int(rf) && len(p.AddingReplicas) == 0 && len(p.RemovingReplicas) == 0 && p.Leader >= 0 {
				done++
			}
		}
		if progress != nil && done > last {
			last = done
			progress(done, len(t.Partitions))
		}
		return t.ReplicationFactor == rf && done == len(t.Partitions)
	})
}
