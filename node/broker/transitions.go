package broker

import (
	"context"
	"slices"

	"paymentlog/node/replica"
)

// ApplyPartition applies a partition's state from the metadata image: it
// opens the log on first use, then makes the local replica leader, follower
// or stopped, or records a new ISR. It is idempotent for an unchanged state
// and ignores states older than what it has seen.
//
// Becoming leader happens under the partition's append lock: no write is
// accepted in the new epoch before the transition completes, and the old
// leader's fetcher is detached first. Becoming follower fails parked produce
// requests with NotLeader and attaches the partition to the fetcher of the
// new leader, whose first fetch response says where to truncate.
func (b *Broker) ApplyPartition(ctx context.Context, st PartitionState) error {
	key := tp{st.Topic, st.Partition}
	p, err := b.getOrOpen(ctx, key, st)
	if err != nil {
		return err
	}
	p.mu.Lock()
	oldID := p.mu.topicID
	p.mu.Unlock()
	if oldID != "" && st.TopicID != "" && oldID != st.TopicID {
		// The topic was deleted and re-created under the same name: the
		// old data is not this topic's.
		p.lg.Info("topic re-created: discarding the old replica", "old_id", oldID, "id", st.TopicID)
		if err := b.StopPartition(ctx, st.Topic, st.Partition, true); err != nil {
			return err
		}
		if p, err = b.getOrOpen(ctx, key, st); err != nil {
			return err
		}
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		return ErrClosed
	}
	p.mu.retention = b.retentionOf(st)
	p.mu.cleanup, p.mu.compaction = st.Cleanup, st.Compaction
	p.compacted.Store(st.Cleanup.Compacts())
	if old := p.messages.Load(); old == nil || *old != st.Messages {
		pol := st.Messages
		p.messages.Store(&pol)
	}
	p.log.SetRollAge(b.rollAgeOf(st))
	p.mu.adding = len(st.Adding)
	p.mu.beingAdded = slices.Contains(st.Adding, b.cfg.NodeID)
	r := p.mu.r
	oldRole, oldLeader, oldISR := r.Role(), r.Leader(), r.ISR()
	leo := p.log.LogEndOffset()
	tr, d := r.Apply(replica.State{Leader: st.Leader, LeaderEpoch: st.LeaderEpoch,
		PartitionEpoch: st.PartitionEpoch, Replicas: slices.Clone(st.Replicas), ISR: slices.Clone(st.ISR),
		MinISR: st.MinISR}, leo, b.cfg.Now())
	if tr == replica.Updated {
		p.countISRChangeLocked(oldISR)
	}
	if tr == replica.ToLeader {
		// What followers reported belongs to an earlier leadership.
		p.mu.followerStarts = nil
	}
	p.startsChangedLocked() // a DeleteRecords waiting looks at the ISR and role again
	prop := p.decideLocked(d)
	unsynced := tr == replica.ToLeader && r.Durable() < leo
	p.mu.Unlock()
	if unsynced {
		// Records the fetcher appended and has not reported durable yet
		// (or this leader's own earlier acks=0 appends): they count toward
		// the HW once flushed.
		p.syncInBackground(st.LeaderEpoch, leo)
	}
	switch tr {
	case replica.ToLeader:
		b.counters.leaderChanges.Add(1)
		if oldRole == replica.RoleFollower {
			b.detachFetcher(oldLeader, p)
		}
		p.lg.Info("became leader", "epoch", st.LeaderEpoch, "isr", st.ISR, "offset", p.log.LogEndOffset())
	case replica.ToFollower:
		if oldRole == replica.RoleFollower {
			b.detachFetcher(oldLeader, p)
		}
		b.attachFetcher(st.Leader, p)
		p.lg.Info("became follower", "epoch", st.LeaderEpoch, "leader", st.Leader, "offset", p.log.LogEndOffset())
	case replica.Stopped:
		if oldRole == replica.RoleFollower {
			b.detachFetcher(oldLeader, p)
		}
		p.lg.Info("replica stopped", "epoch", st.LeaderEpoch, "leader", st.Leader)
	case replica.Updated:
		p.lg.Debug("partition updated", "epoch", st.LeaderEpoch, "isr", st.ISR)
	}
	p.propose(prop)
	return nil
}

// StopPartition stops serving a partition (no longer a replica, or the topic
// was deleted) and closes its log; deleteData removes its directory.
func (b *Broker) StopPartition(ctx context.Context, topic string, partition int32, deleteData bool) error {
	key := tp{topic, partition}
	b.mu.Lock()
	p := b.mu.parts[key]
	delete(b.mu.parts, key)
	delete(b.mu.ckpt, key)
	b.mu.Unlock()
	if p == nil {
		return nil
	}
	p.mu.Lock()
	leader, role := p.mu.r.Leader(), p.mu.r.Role()
	p.mu.Unlock()
	if role == replica.RoleFollower {
		b.detachFetcher(leader, p)
	}
	err := p.close(deleteData)
	b.ckptDirty.Store(true)
	p.lg.Info("partition stopped", "delete", deleteData)
	return err
}
