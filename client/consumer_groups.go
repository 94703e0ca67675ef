package client

import (
	"context"
	"fmt"
	"sort"

	"paymentlog/wire"
)

// A Consumer resumes where a consumer group left off with SeekCommitted and
// stores its progress with CommitPositions (or CommitOffsets), both through
// the active controller (Admin.FetchOffsets, Admin.CommitOffsets).
//
// A Consumer is no member of the group: the group is only a name under
// which offsets are stored. It reads the partitions it is assigned
// (Assign, SeekCommitted), whatever others read, and two such consumers
// committing the same partition overwrite each other: the last commit
// wins. Its commits are refused (wire.NonEmptyGroup) while the group has
// members: consumers that share a group's partitions are GroupConsumers
// (group_consumer.go), which the cluster assigns partitions to.
//
// Delivery is at least once when the application commits only offsets it
// has processed: records processed after the last commit are read again
// by the consumer that resumes.

// SeekCommitted starts each of tps at group's committed offset, read from
// the active controller, and the partitions the group has no offset for at
// fallback (an offset, SeekBeginning or SeekEnd); it returns the latter.
// Partitions not yet assigned are assigned, as Assign does. A committed
// offset with a leader epoch makes the first fetch check that the leader's
// log still holds the records before it (KIP-320): if it was truncated
// below the offset while the group was away, Poll returns a
// *LogTruncatedError instead of reading on from a history that does not
// follow the one the group processed. A committed offset below the log
// start (retention deleted records the group never read) is an
// OffsetOutOfRange as any other position, or goes on at the log start
// with ConsumerConfig.OnOffsetReset set.
//
// The committed offsets count as committed by this consumer: CommitPositions
// leaves a partition out until its position moves from them. Errors are
// Admin.FetchOffsets's (wire.InvalidGroupID for a bad group name).
func (cs *Consumer) SeekCommitted(ctx context.Context, group string, tps []TopicPartition, fallback int64) ([]TopicPartition, error) {
	topics := map[string]bool{}
	var names []string
	for _, tp := range tps {
		if !topics[tp.Topic] {
			topics[tp.Topic] = true
			names = append(names, tp.Topic)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	sort.Strings(names)
	offs, err := cs.c.Admin().FetchOffsets(ctx, group, names...)
	if err != nil {
		return nil, err
	}
	committed := make(map[TopicPartition]wire.GroupOffset, len(offs))
	for _, o := range offs {
		committed[TopicPartition{o.Topic, o.Partition}] = o
	}
	var missing []TopicPartition
	for _, tp := range tps {
		o, ok := committed[tp]
		if !ok {
			cs.Assign([]TopicPartition{tp}, fallback)
			missing = append(missing, tp)
			continue
		}
		cs.Assign([]TopicPartition{tp}, o.Offset)
		if cp := cs.parts[tp]; len(cp.epochs) == 0 && o.LeaderEpoch >= 0 && o.Offset > 0 {
			// The record before the offset was of that epoch: the
			// history the next fetch is checked against (one the
			// consumer returned itself, kept by the seek, knows more).
			cp.epochs = []epochStart{{epoch: o.LeaderEpoch, start: o.Offset - 1}}
		}
		cs.markCommitted(group, tp, o.Offset)
	}
	return missing, nil
}

// CommitPositions commits, for group, the position (Position) of every
// assigned partition whose position has moved since this consumer last
// committed it for group or read it in SeekCommitted, with the leader epoch
// of the last record Poll returned before it (-1 when the consumer does not
// know it). Partitions whose SeekBeginning or SeekEnd is not yet resolved
// are left out; with nothing to commit it returns nil without a request.
//
// A position is the offset after the last record Poll returned: call it
// once the application has processed every record returned, or use
// CommitOffsets. Each call is one metadata log entry: commit every few
// seconds, not after every record. Errors are Admin.CommitOffsets's; after
// one, the next call commits the same partitions again.
func (cs *Consumer) CommitPositions(ctx context.Context, group string) error {
	offsets := make(map[TopicPartition]int64, len(cs.order))
	for _, cp := range cs.order {
		if cp.pos >= 0 {
			offsets[cp.tp] = cp.pos
		}
	}
	return cs.CommitOffsets(ctx, group, offsets)
}

// CommitOffsets commits, for group, offsets of assigned partitions: each
// the next offset to process (the last processed + 1), as an application
// that processed only part of what Poll returned commits. The leader epoch
// sent with each is that of the record before the offset when the offset
// is within the records Poll returned since the partition was last sought
// elsewhere (-1 otherwise). Offsets equal to the last this consumer
// committed for group (or read in SeekCommitted) are left out; with nothing
// left it returns nil without a request. An unassigned partition or a
// negative offset is an error. Otherwise errors are Admin.CommitOffsets's.
func (cs *Consumer) CommitOffsets(ctx context.Context, group string, offsets map[TopicPartition]int64) error {
	return cs.commitOffsets(ctx, group, "", offsets)
}

// commitOffsets is CommitOffsets as group member memberID ("" for none:
// Admin.commitOffsetsAs).
func (cs *Consumer) commitOffsets(ctx context.Context, group, memberID string, offsets map[TopicPartition]int64) error {
	for tp := range offsets {
		if _, ok := cs.parts[tp]; !ok {
			return fmt.Errorf("client: commit offsets: %s is not assigned", tp)
		}
	}
	var req []wire.GroupOffset
	snap := cs.c.meta.current()
	for _, cp := range cs.order {
		off, ok := offsets[cp.tp]
		if !ok || cs.committedAt(group, cp.tp) == off {
			continue
		}
		if off < 0 {
			return fmt.Errorf("client: commit offsets: %s: offset %d is negative", cp.tp, off)
		}
		// The incarnation of the topic this consumer's metadata knows: a
		// topic deleted and re-created since refuses the commit rather
		// than taking an offset of the records of the old one.
		var topicID string
		if snap != nil {
			if t, ok := snap.topics[cp.tp.Topic]; ok {
				topicID = t.ID
			}
		}
		req = append(req, wire.GroupOffset{Topic: cp.tp.Topic, TopicID: topicID, Partition: cp.tp.Partition,
			Offset: off, LeaderEpoch: cp.epochBefore(off)})
	}
	if len(req) == 0 {
		return nil
	}
	if err := cs.c.Admin().commitOffsetsAs(ctx, group, memberID, req); err != nil {
		return err
	}
	for _, o := range req {
		cs.markCommitted(group, TopicPartition{o.Topic, o.Partition}, o.Offset)
	}
	return nil
}

// committedAt returns the offset this consumer last committed for group
// on tp, or read for it in SeekCommitted; -1 if none.
func (cs *Consumer) committedAt(group string, tp TopicPartition) int64 {
	if o, ok := cs.committed[group][tp]; ok {
		return o
	}
	return -1
}

func (cs *Consumer) markCommitted(group string, tp TopicPartition, off int64) {
	if cs.committed == nil {
		cs.committed = map[string]map[TopicPartition]int64{}
	}
	if cs.committed[group] == nil {
		cs.committed[group] = map[TopicPartition]int64{}
	}
	cs.committed[group][tp] = off
}
