package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"paymentlog/node/replica"
	"paymentlog/segment"
)

// Retention (DESIGN §4): every Config.RetentionCheckInterval each partition
// this broker hosts, leader or follower, deletes its oldest sealed segments
// past the topic's retention.ms (the segment's largest record timestamp,
// from its time index, is older than now minus it) or retention.bytes (the
// log without the segment is still at least that long), as Kafka does. Two
// bounds keep it from losing what replication promises:
//
//   - never the active segment;
//   - never a segment holding an offset at or above the replica's high
//     watermark: a record not yet committed is not retention's to delete,
//     and a follower's HW (what it learnt from its leader) is at most the
//     leader's, so a lagging follower or an HW held back by a slow ISR
//     member keeps its segments.
//
// The log start offset becomes the base of the first segment kept; fetches
// below it get OffsetOutOfRange, ListOffsets earliest and describe answer
// it. A follower also raises its log start to its leader's (Kafka's
// maybeIncrementLogStartOffset, bounded by its own HW) so that replicas
// agree on where the partition starts, and one whose fetch offset is below
// the leader's log start truncates fully and restarts there (fetcher.go).
//
// Before deleting, the producer state is snapshotted (ProducerSnapshotFile)
// with every idempotent batch below the HW in it: the in-memory state keeps
// the producers whose batches are deleted, and the snapshot keeps them
// across a restart (or a follower truncation that replays the log).

// retentionOf is a partition's retention limits: the topic's, else the
// broker's defaults.
func (b *Broker) retentionOf(st PartitionState) segment.Retention {
	ms, bytes := b.cfg.RetentionMs, b.cfg.RetentionBytes
	if st.RetentionMs != nil {
		ms = *st.RetentionMs
	}
	if st.RetentionBytes != nil {
		bytes = *st.RetentionBytes
	}
	r := segment.Retention{Bytes: bytes, Age: -1}
	if ms >= 0 && ms <= math.MaxInt64/int64(time.Millisecond) {
		r.Age = time.Duration(ms) * time.Millisecond
	}
	return r
}

// retentionLoop runs ApplyRetention and ExpireProducers every
// Config.RetentionCheckInterval.
func (b *Broker) retentionLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.RetentionCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			b.ApplyRetention(b.ctx)
			b.ExpireProducers(b.ctx)
		}
	}
}

// ApplyRetention runs one retention pass over every partition now
// (Config.Now) and returns how many segments it deleted. A partition whose
// pass fails is logged and skipped; the next pass tries again.
func (b *Broker) ApplyRetention(ctx context.Context) (deleted int) {
	now := b.cfg.Now()
	for _, p := range b.partitions() {
		n, err := p.applyRetention(ctx, now)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, segment.ErrClosed) {
				b.counters.retentionFailures.Add(1)
				p.lg.Warn("applying retention", "err", err)
			}
			continue
		}
		b.counters.retentionDeleted.Add(uint64(n))
		deleted += n
	}
	return deleted
}

// applyRetention deletes the segments the partition's retention limits
// allow below its HW, at time now.
func (p *partition) applyRetention(ctx context.Context, now time.Time) (int, error) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		return 0, nil
	}
	r := p.mu.retention
	r.Now, r.Below = now, p.mu.r.HW()
	p.mu.Unlock()
	to, n := p.log.RetentionPoint(r)
	if n == 0 {
		return 0, nil
	}
	if err := p.deleteBeforeLocked(ctx, to); err != nil {
		return 0, err
	}
	p.lg.Info("retention deleted segments", "segments", n, "offset", to,
		"retention_ms", r.Age.Milliseconds(), "retention_bytes", r.Bytes)
	return n, nil
}

// raiseLogStart raises a follower's log start offset towards its leader's
// (leaderStart), bounded by its own HW, after a fetch: whole segments below
// it are deleted (Kafka's maybeIncrementLogStartOffset).
func (p *partition) raiseLogStart(ctx context.Context, leader int32, epoch int32, leaderStart int64) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	r := p.mu.r
	following := !p.mu.stopped && r.Role() == replica.RoleFollower && r.Leader() == leader && r.LeaderEpoch() == epoch
	to := min(leaderStart, r.HW(), r.LEO())
	p.mu.Unlock()
	if !following || to <= p.log.LogStartOffset() {
		return nil
	}
	before := len(p.log.Segments())
	if err := p.deleteBeforeLocked(ctx, to); err != nil {
		return err
	}
	p.b.counters.retentionDeleted.Add(uint64(max(before-len(p.log.Segments()), 0)))
	p.lg.Info("log start raised to the leader's", "offset", to, "leader", leader)
	return nil
}

// deleteBeforeLocked makes off (at or below the HW) the log start offset,
// deleting the whole segments below it, after snapshotting the producer
// state so that the producers of the deleted batches survive a restart.
// snapMu and appendMu held.
func (p *partition) deleteBeforeLocked(ctx context.Context, off int64) error {
	s := p.producers
	if s.unknown != nil {
		// The replay that rebuilds it (a reopen) needs the batches.
		return fmt.Errorf("broker: producer state unknown, keeping the segments until it is rebuilt: %w", s.unknown)
	}
	// Every idempotent batch below the HW, hence below off, goes to the
	// stable part, which is what the snapshot holds.
	s.advance(p.hw())
	if snap, ok := snapshotOf(s, p.log); ok {
		if err := segment.WriteCheckpoint(p.fs(), filepath.Join(p.dir, ProducerSnapshotFile), encodeProducerSnapshot(snap)); err != nil {
			// Deleting without it would lose those producers at the next
			// restart: keep the segments.
			return fmt.Errorf("broker: producer snapshot before deleting segments: %w", err)
		}
		p.snapAt = s.stableBatches
	}
	err := p.log.DeleteBefore(ctx, off)
	// Even after a failure: the log may have moved its start before it.
	p.mu.Lock()
	p.mu.r.SetLogStart(p.log.LogStartOffset())
	p.mu.Unlock()
	return err
}
