package node

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"paymentlog/node/broker"
	"paymentlog/node/metadata"
	"paymentlog/segment"
)

// watchMetadata reacts to every committed metadata change: it tells the
// broker the new state of each partition this node replicates (become
// leader, become follower, ISR changed) and stops replicas that were removed
// or whose topic was deleted. Changes arrive in order; each pass compares the
// whole new image with what the broker was last told, so a merged or missed
// delta cannot leave the broker behind.
func (n *Node) watchMetadata(ctx context.Context) error {
	sub := n.store.Subscribe()
	defer sub.Close()
	for {
		ch, err := sub.Next(ctx)
		if err != nil {
			if errors.Is(err, metadata.ErrSubscriptionClosed) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := n.store.Err(); errors.Is(err, metadata.ErrUnknownRecord) {
			// Written by a newer build (metadata_version.go): applying
			// the entries around it would leave this node's image apart
			// from the others', acting on it worse than stopping.
			return fmt.Errorf("the metadata log holds a record this build does not know, written by a newer paymentlog: upgrade this node (%w)", err)
		}
		n.reconcile(ctx, ch.Next)
	}
}

// reconcile brings the broker in line with img.
func (n *Node) reconcile(ctx context.Context, img *metadata.Image) {
	addrs := map[int32]string{}
	live := map[int32]int64{}
	for _, b := range img.Brokers() {
		addrs[b.ID] = b.Addr
		if !b.Fenced && !b.ShuttingDown {
			live[b.ID] = b.Incarnation
		}
	}
	n.broker.SetBrokerAddrs(addrs)
	n.broker.SetEligibleBrokers(live)
	n.applyClusterConfigs(img)

	// Until this incarnation is registered, leadership the image gives this
	// node belongs to a previous incarnation, whose log may have lost its tail
	// since (a torn write, a replaced disk). Acting on it would let followers
	// at the same leader epoch truncate to our shorter log. Registering fences
	// the previous incarnation and moves its leaderships, so wait for it.
	self, ok := img.Broker(n.cfg.ID)
	current := ok && self.Incarnation == n.incarnation
	want := map[partKey]broker.PartitionState{}
	cluster := img.ClusterConfigs() // defaults of some topic configs
	for _, t := range img.Topics() {
		for _, p := range t.Partitions {
			if !p.HasReplica(n.cfg.ID) {
				continue
			}
			st := broker.PartitionState{
				Topic: p.Topic, TopicID: p.TopicID, Partition: p.Partition,
				Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch,
				Replicas: slices.Clone(p.Replicas), ISR: slices.Clone(p.ISR), MinISR: t.MinISR,
				Adding: slices.Clone(p.Adding),
			}
			if ms, ok, bytes, bok := t.Retention(); ok || bok {
				if ok {
					st.RetentionMs = &ms
				}
				if bok {
					st.RetentionBytes = &bytes
				}
			}
			if sb, ok := t.SegmentBytes(); ok {
				st.SegmentBytes = sb
			}
			if ms, ok := t.SegmentMs(); ok {
				st.SegmentMs = msDuration(ms)
			}
			st.Cleanup, st.Compaction = cleanupOf(t.Compaction())
			st.Messages = messagesOf(t.Messages(cluster))
			if !current && p.Leader == n.cfg.ID {
				st.Leader = -1
			}
			want[partKey{p.Topic, p.Partition}] = st
		}
	}
	n.mu.Lock()
	prev := n.mu.applied
	n.mu.Unlock()
	// Logs not yet open (a restart: every one) are opened several at a
	// time first; applying the states stays one by one.
	var changed []broker.PartitionState
	for k, st := range want {
		if old, ok := prev[k]; !ok || !samePartitionState(old, st) {
			changed = append(changed, st)
		}
	}
	n.broker.OpenPartitions(ctx, changed)
	next := make(map[partKey]broker.PartitionState, len(want))
	for k, st := range want {
		if old, ok := prev[k]; ok && samePartitionState(old, st) {
			next[k] = old
			continue
		}
		if err := n.broker.ApplyPartition(ctx, st); err != nil {
			n.log.Error("apply partition state", "topic", k.topic, "partition", k.partition, "err", err)
			continue // retried on the next change
		}
		next[k] = st
	}
	for k, old := range prev {
		if _, ok := want[k]; ok {
			continue
		}
		// The replica was removed from this node or its topic deleted (maybe
		// re-created under the same name): its data goes too, but only once
		// the image holds this incarnation's registration. Before that
		// (a restart replaying the metadata log) img is history: a
		// replica removed then may have been given back to this node and
		// caught up since, and be in the ISR or the ELR now, where the
		// controller may make it the leader; deleting its records on the
		// way through would lose acknowledged writes. Its copy stays on
		// disk (RemoveUnassigned sweeps it once this incarnation is
		// unfenced if it is still unassigned then; a topic re-created
		// under the same name discards it by topic id).
		if err := n.broker.StopPartition(ctx, k.topic, k.partition, current); err != nil {
			n.log.Error("stop partition", "topic", k.topic, "partition", k.partition, "err", err)
			next[k] = old
		}
	}
	n.mu.Lock()
	n.mu.applied = next
	n.mu.reconciled = img.Offset()
	n.mu.Unlock()
	if current && !self.Fenced && !n.sweptCopies {
		n.removeUnassignedCopies(want)
	}
}

// removeUnassignedCopies deletes, once per process, the partition copies on
// disk that the image no longer assigns to this node (moved away or deleted
// while it was down; see broker.RemoveUnassigned). It runs once this
// incarnation is unfenced: the controller unfences it only after it has
// applied the metadata log up to its registration, so want holds every
// assignment made before. Later removals stop their partitions as they
// come (reconcile).
func (n *Node) removeUnassignedCopies(want map[partKey]broker.PartitionState) {
	removed, err := n.broker.RemoveUnassigned(func(topic string, partition int32) bool {
		_, ok := want[partKey{topic, partition}]
		return ok
	})
	for _, name := range removed {
		n.log.Info("removed a partition copy no longer assigned to this node", "dir", name)
	}
	if err != nil {
		n.log.Error("removing partition copies no longer assigned to this node", "err", err)
		return // tried again on the next change
	}
	n.sweptCopies = true
}

func samePartitionState(a, b broker.PartitionState) bool {
	return a.Topic == b.Topic && a.TopicID == b.TopicID && a.Partition == b.Partition &&
		a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) && a.MinISR == b.MinISR &&
		slices.Equal(a.Adding, b.Adding) &&
		sameLimit(a.RetentionMs, b.RetentionMs) && sameLimit(a.RetentionBytes, b.RetentionBytes) &&
		a.SegmentBytes == b.SegmentBytes && a.SegmentMs == b.SegmentMs && a.Cleanup == b.Cleanup && a.Compaction == b.Compaction &&
		a.Messages == b.Messages
}

// messagesOf is a topic's message configs as the broker takes them.
func messagesOf(m metadata.Messages) broker.MessagePolicy {
	pol := broker.MessagePolicy{LogAppendTime: m.LogAppendTime, MaxBytes: int(m.MaxBytes), MaxBytesFromCluster: m.MaxBytesFromCluster}
	switch m.Compression {
	case metadata.CompressionUncompressed:
		pol.Recompress, pol.Codec = true, segment.CodecNone
	case metadata.CompressionLZ4:
		pol.Recompress, pol.Codec = true, segment.CodecLZ4
	case metadata.CompressionZstd:
		pol.Recompress, pol.Codec = true, segment.CodecZstd
	}
	if m.BeforeMaxMs >= 0 {
		pol.Before = broker.TimestampBound{Set: true, Max: msDuration(m.BeforeMaxMs)}
	}
	if m.AfterMaxMs >= 0 {
		pol.After = broker.TimestampBound{Set: true, Max: msDuration(m.AfterMaxMs)}
	}
	return pol
}

// cleanupOf is a topic's cleanup.policy and compaction configs as the
// broker takes them.
func cleanupOf(c metadata.Compaction) (broker.CleanupPolicy, broker.CompactionConfig) {
	pol := broker.CleanupDelete
	switch {
	case c.Compact && c.Delete:
		pol = broker.CleanupCompactDelete
	case c.Compact:
		pol = broker.CleanupCompact
	}
	return pol, broker.CompactionConfig{MinDirtyRatio: c.MinCleanableDirtyRatio,
		MinLag: msDuration(c.MinCompactionLagMs), MaxLag: msDuration(c.MaxCompactionLagMs),
		DeleteRetention: msDuration(c.DeleteRetentionMs)}
}

// msDuration converts milliseconds (>= 0) to a duration, the longest one
// for more than it holds (292 years).
func msDuration(ms int64) time.Duration {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// sameLimit compares two optional limits.
func sameLimit(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
