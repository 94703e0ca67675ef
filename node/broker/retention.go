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
// log without the segment is still at least that long), as Kafka does,
// unless the topic's cleanup.policy is compact alone (cleaner.go). Two
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
//
// Produce never waits for a pass's disk I/O: the pass takes the
// partition's appendMu only to choose the new log start and encode the
// snapshot (memory), writes the snapshot and calls segment.Log.DeleteBefore
// with snapMu alone held (the log locks appends out only to move its start
// in memory; its checkpoint, renames, unlinks and fsyncs run beside
// appends), then takes appendMu again to record the new start in the
// replica. A follower raises its log start beside its fetch loop
// (fetcher.raiseLogStart), which goes on fetching meanwhile.

// retentionOf is a partition's retention limits: the topic's, else the
// broker's defaults; none (forever, unlimited) when its cleanup.policy is
// compact alone, as in Kafka: only the cleaner removes its records.
func (b *Broker) retentionOf(st PartitionState) segment.Retention {
	if !st.Cleanup.Deletes() {
		return segment.Retention{Bytes: -1, Age: -1}
	}
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

// retentionLoop runs ApplyRetention, SweepQuarantines and ExpireProducers
// every Config.RetentionCheckInterval.
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
			b.SweepQuarantines(b.ctx, b.cfg.Now())
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
		p.quarantined.Store(p.log.QuarantinedBytes()) // an operator may have removed it
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
// allow below its HW, at time now. The partition's append lock is held
// only for memory work: see deleteBefore.
func (p *partition) applyRetention(ctx context.Context, now time.Time) (int, error) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		p.appendMu.Unlock()
		return 0, nil
	}
	r := p.mu.retention
	r.Now, r.Below = now, p.mu.r.HW()
	p.mu.Unlock()
	// A partition no longer written: its active segment is sealed once
	// it is past retention.ms, so that it goes too (as in Kafka).
	if rolled, err := p.log.RollExpired(r); err != nil {
		p.appendMu.Unlock()
		return 0, err
	} else if rolled {
		p.lg.Debug("sealed the active segment for retention", "retention_ms", r.Age.Milliseconds())
	}
	to, n := p.log.RetentionPoint(r)
	var snap *encodedSnapshot
	var err error
	if n > 0 {
		snap, err = p.snapshotBeforeDeletingLocked()
	}
	p.appendMu.Unlock()
	if n == 0 || err != nil {
		return 0, err
	}
	if err := p.deleteBefore(ctx, to, snap); err != nil {
		return 0, err
	}
	p.lg.Info("retention deleted segments", "segments", n, "offset", to,
		"retention_ms", r.Age.Milliseconds(), "retention_bytes", r.Bytes)
	return n, nil
}

// raiseLogStart raises a follower's log start offset towards its leader's
// (leaderStart), bounded by its own HW, after a fetch: whole segments below
// it are deleted (Kafka's maybeIncrementLogStartOffset). Like
// applyRetention it holds the append lock only for memory work.
func (p *partition) raiseLogStart(ctx context.Context, leader int32, epoch int32, leaderStart int64) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	p.mu.Lock()
	r := p.mu.r
	following := !p.mu.stopped && r.Role() == replica.RoleFollower && r.Leader() == leader && r.LeaderEpoch() == epoch
	to := min(leaderStart, r.HW(), r.LEO())
	p.mu.Unlock()
	if !following || to <= p.log.LogStartOffset() {
		p.appendMu.Unlock()
		return nil
	}
	before := len(p.log.Segments())
	snap, err := p.snapshotBeforeDeletingLocked()
	p.appendMu.Unlock()
	if err != nil {
		return err
	}
	err = p.deleteBefore(ctx, to, snap)
	// Counted also after a failure: the log may have moved its start before it.
	p.b.counters.retentionDeleted.Add(uint64(max(before-len(p.log.Segments()), 0)))
	if err != nil {
		return err
	}
	p.lg.Info("log start raised to the leader's", "offset", to, "leader", leader)
	return nil
}

// encodedSnapshot is a producer snapshot to write: its bytes and the
// producer state's stableBatches it was taken at.
type encodedSnapshot struct {
	data []byte
	at   uint64
}

// snapshotBeforeDeletingLocked encodes the producer state's snapshot that
// must be on disk before batches below the HW are deleted (nil: nothing to
// write), so that the producers of the deleted batches survive a restart.
// Every idempotent batch below the HW moves to the stable part, which is
// what the snapshot holds. snapMu and appendMu held; memory only.
func (p *partition) snapshotBeforeDeletingLocked() (*encodedSnapshot, error) {
	s := p.producers
	if s.unknown != nil {
		// The replay that rebuilds it (a reopen) needs the batches.
		return nil, fmt.Errorf("broker: producer state unknown, keeping the segments until it is rebuilt: %w", s.unknown)
	}
	hw := p.hw()
	s.advance(hw)
	snap, ok := snapshotOf(s, p.log, hw)
	if !ok {
		return nil, nil
	}
	return &encodedSnapshot{data: encodeProducerSnapshot(snap), at: s.stableBatches}, nil
}

// deleteBefore writes snap (the producer snapshot, unless nil), makes off
// (at or below the HW when it was chosen) the log start offset, deleting
// the whole segments below it, and records the new start in the replica.
// snapMu held, appendMu not: the snapshot's fsyncs and the deletion's
// (segment.Log.DeleteBefore, which itself locks appends out only to move
// the log start in memory) run while appends go on. Between choosing off
// and here, appends only add above the HW; a follower truncation waits for
// the log's deletion, and one that ran first makes DeleteBefore fail (off
// past the log end) or finds nothing to delete (off at or below a new
// log start).
//
// On a disk with no free block the snapshot and the log-start checkpoint
// cannot be written: then the node's disk reserve is released
// (Config.ReleaseDiskReserve) and both are tried once more, so that
// retention frees space on a full disk without the operator's help.
func (p *partition) deleteBefore(ctx context.Context, off int64, snap *encodedSnapshot) error {
	err := p.writeAndDelete(ctx, off, snap)
	if segment.IsDiskFull(err) && p.b.cfg.ReleaseDiskReserve != nil && p.b.cfg.ReleaseDiskReserve() {
		err = p.writeAndDelete(ctx, off, snap)
		if err == nil {
			p.lg.Info("deleted segments on a full disk with the room of the disk reserve", "offset", off)
		}
	}
	// Even after a failure: the log may have moved its start before it.
	// Under appendMu, as every change of the replica's log bounds, so that
	// a truncation that ran meanwhile is not undone by a stale start.
	p.appendMu.Lock()
	if snap != nil {
		p.snapAt = snap.at
	}
	p.mu.Lock()
	p.mu.r.SetLogStart(p.log.LogStartOffset())
	p.mu.Unlock()
	p.appendMu.Unlock()
	return err
}

// writeAndDelete is deleteBefore's disk work: the producer snapshot, then
// the log's deletion.
func (p *partition) writeAndDelete(ctx context.Context, off int64, snap *encodedSnapshot) error {
	if snap != nil {
		if err := segment.WriteCheckpoint(p.fs(), filepath.Join(p.dir, ProducerSnapshotFile), snap.data); err != nil {
			// Deleting without it would lose those producers at the next
			// restart: keep the segments.
			return fmt.Errorf("broker: producer snapshot before deleting segments: %w", err)
		}
	}
	return p.log.DeleteBefore(ctx, off)
}
