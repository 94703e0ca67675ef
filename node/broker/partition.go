package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/node/replica"
	"paymentlog/segment"
	"paymentlog/wire"
)

// partition is the local replica of one partition.
type partition struct {
	b   *Broker
	key tp
	dir string
	log *segment.Log // immutable after open
	lg  *slog.Logger

	// snapMu serialises producer snapshot writes (the periodic ones and
	// the one at close); take it before appendMu.
	snapMu sync.Mutex
	// snapAt is producers.stableBatches when the last snapshot was taken,
	// snapSize the log's size and snapEnd the snapshot's stable end
	// (both lowered when the log shrinks). Guarded by snapMu and appendMu.
	snapAt   uint64
	snapSize int64
	snapEnd  int64

	// appendMu serialises every change to the log's contents and to
	// producers: leader appends, follower copies and truncations, role
	// transitions. I/O happens under it, except a retention deletion's
	// (retention.go: it holds snapMu across its I/O and appendMu only for
	// memory work); take it before mu.
	appendMu sync.Mutex
	// producers is the idempotent-producer state. Guarded by appendMu.
	producers *producerState
	// reordered is closed by the next leader append, for produce requests
	// that overtook an earlier one of their producer (reorder.go); nil
	// until one waits. Guarded by appendMu.
	reordered chan struct{}
	// raising is set while a follower raises its log start to its
	// leader's, beside the fetch loop (fetcher.raiseLogStart).
	raising atomic.Bool
	// truncations counts the follower's truncations (fetcher.truncate),
	// raised before each: a consumer read on a follower is served only if
	// none began while it ran (follower_reads.go).
	truncations atomic.Uint64
	// quarantined is the size of what scrub repairs set aside in the
	// partition's directory (segment's quarantine.go), read at open, at
	// every retention pass and after the sweep removes one
	// (quarantine_sweep.go).
	quarantined atomic.Int64
	// startWaiting counts the DeleteRecords waiting in mu.startWaits, read
	// without the lock by follower fetches (delete_records.go).
	startWaiting atomic.Int32
	// compacted mirrors mu.cleanup.Compacts() for the produce path,
	// which refuses records without a key when it is set.
	compacted atomic.Bool
	// messages is the topic's MessagePolicy for the produce path, from
	// the last ApplyPartition (nil until then: none).
	messages atomic.Pointer[MessagePolicy]
	// cleanerWarned is the last cleaner error logged for the partition
	// ("" after a pass that did not fail). Guarded by Broker.cleanMu.
	cleanerWarned string

	mu struct {
		sync.Mutex
		r       *replica.Replica
		topicID string
		stopped bool
		// reqs maps a parked produce request to the channel its handler waits on.
		reqs map[uint64]chan replica.Code
		// retention is the partition's retention limits (Now and Below
		// unset), from the last ApplyPartition.
		retention segment.Retention
		// cleanup and compaction are the topic's cleanup.policy and
		// compaction configs, from the last ApplyPartition (cleaner.go).
		cleanup    CleanupPolicy
		compaction CompactionConfig
		// adding is how many replicas a reassignment in progress is
		// adding (not yet in sync: they do not make the partition
		// under-replicated), from the last ApplyPartition; beingAdded
		// says this node is one of them (its copy may be throttled).
		adding     int
		beingAdded bool
		// followerStarts is the log start offset each follower reported
		// in its last fetch of this leadership (delete_records.go);
		// startsChanged is closed, and replaced, when one moves.
		followerStarts map[int32]int64
		startsChanged  chan struct{}
		// startWaits counts, per log start offset, the DeleteRecords
		// requests waiting for the followers to reach it: while one
		// waits, a follower's fetch reporting less is answered within
		// startNudge instead of at the end of its long poll
		// (delete_records.go).
		startWaits map[int64]int
		// waiters are long-polling fetches (consumers and follower sessions)
		// to wake when data arrives or the HW moves.
		waiters map[*waiter]struct{}
	}
}

// waiter is a long-polling fetch registered with one or more partitions.
type waiter struct{ ch chan struct{} }

func newWaiter() *waiter { return &waiter{ch: make(chan struct{}, 1)} }

func (w *waiter) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// openPartition opens (or creates) the partition's log, with segments of
// segBytes (0: the broker's default), seeds its HW from the checkpoint and
// rebuilds its producer state from the batch headers.
func (b *Broker) openPartition(ctx context.Context, key tp, topicID string, segBytes, hw int64) (*partition, error) {
	dir := b.partitionDir(key.topic, key.partition)
	opts := b.cfg.Log
	if segBytes > 0 {
		opts.SegmentBytes = min(segBytes, segment.MaxSegmentBytes)
	}
	if opts.Logger == nil {
		opts.Logger = b.log
	}
	fs := opts.FS
	if fs == nil {
		fs = segment.OSFS{}
	}
	fresh := !looksLikePartition(fs, dir)
	if discarded, err := discardOtherTopic(fs, dir, topicID); err != nil {
		return nil, fmt.Errorf("broker: %s: checking the topic id: %w", key, err)
	} else if discarded {
		// The checkpointed HW was the other topic's too.
		b.log.Info("discarded the data of a deleted topic of the same name", "topic", key.topic,
			"partition", key.partition, "id", topicID)
		hw = 0
		fresh = true
	}
	if fresh {
		if err := b.markEmpty(fs, dir); err != nil {
			return nil, fmt.Errorf("broker: %s: marking the new log empty: %w", key, err)
		}
	}
	lg, err := segment.Open(ctx, dir, opts)
	if err != nil {
		return nil, err
	}
	if topicID != "" {
		if old, err := readTopicID(fs, dir); err != nil || old != topicID {
			if err == nil {
				err = writeTopicID(fs, dir, topicID)
			}
			if err != nil {
				lg.Close()
				return nil, fmt.Errorf("broker: %s: recording the topic id: %w", key, err)
			}
		}
	}
	p := &partition{b: b, key: key, dir: dir, log: lg,
		lg: b.log.With("topic", key.topic, "partition", key.partition)}
	p.quarantined.Store(lg.QuarantinedBytes())
	p.mu.r = replica.New(replica.Config{ID: b.cfg.NodeID, LagTime: b.cfg.ReplicaLagTime, TrackDurable: true, Eligible: b.eligibleFollower},
		lg.LogStartOffset(), lg.LogEndOffset(), hw)
	p.mu.topicID = topicID
	p.mu.retention = segment.Retention{Bytes: -1, Age: -1}
	p.mu.reqs = make(map[uint64]chan replica.Code)
	p.mu.waiters = make(map[*waiter]struct{})
	if p.producers, err = openProducers(fs, dir, lg, hw, b.cfg.Now(), &b.counters.producerReplayBatches, p.lg); err != nil {
		lg.Close()
		return nil, err
	}
	return p, nil
}

// openProducers rebuilds a partition's producer state: from the last
// snapshot (ProducerSnapshotFile) and the batches after it when the log
// still holds the batch it ends with or retention deleted it, else from
// every batch of the log. The batches below hw are its stable part
// (producerState.advance).
func openProducers(fs segment.FS, dir string, lg *segment.Log, hw int64, now time.Time, replayed *atomic.Uint64, plog *slog.Logger) (*producerState, error) {
	s, ok, err := loadProducerSnapshot(fs, dir, lg)
	switch {
	case err != nil && !errors.Is(err, os.ErrNotExist):
		plog.Warn("ignoring the producer snapshot; replaying the log", "err", err)
	case err == nil && !ok:
		plog.Info("the producer snapshot does not match the log; replaying the log")
	}
	from := lg.LogStartOffset()
	if ok {
		from = max(s.stableEnd, from)
	} else {
		s = newProducerState()
	}
	if err := replayProducers(s, lg, from, now, replayed); err != nil {
		return nil, err
	}
	s.advance(hw)
	return s, nil
}

// replayProducers applies the batch headers of lg from offset off (a batch
// boundary) to its end to s, counting them in replayed; when each batch was
// appended is not in the log, so they count as seen now (seenAt).
func replayProducers(s *producerState, lg *segment.Log, off int64, now time.Time, replayed *atomic.Uint64) error {
	end := lg.LogEndOffset()
	for off < end {
		v, err := lg.Read(off, 4<<20, -1)
		if err != nil {
			return err
		}
		if len(v.Data) == 0 {
			v.Release()
			break
		}
		err = walkHeaders(v.Data, func(h segment.Header) {
			replayed.Add(1)
			s.update(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta, h.BaseOffset, seenAt(h, now))
		})
		next := v.Next
		v.Release()
		if err != nil {
			return err
		}
		if next <= off {
			break
		}
		off = next
	}
	return nil
}

// fs is the file system the partition's files are on.
func (p *partition) fs() segment.FS { return p.b.fs() }

// fs is the file system partition files are on.
func (b *Broker) fs() segment.FS {
	if fs := b.cfg.Log.FS; fs != nil {
		return fs
	}
	return segment.OSFS{}
}

// hw returns the replica's high watermark.
func (p *partition) hw() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.r.HW()
}

// walkHeaders calls fn with the header of each whole batch in buf (no CRC check).
func walkHeaders(buf []byte, fn func(segment.Header)) error {
	for len(buf) > 0 {
		h, err := segment.ParseHeader(buf)
		if err != nil {
			return err
		}
		n := segment.Batch(buf).Size()
		if n <= 0 || n > len(buf) {
			return segment.ErrTornTail
		}
		fn(h)
		buf = buf[n:]
	}
	return nil
}

// decideLocked carries out the replica's decisions that need no I/O:
// completing parked produces and waking fetchers. It returns an ISR change
// to propose (with the epochs to propose it at), which the caller sends
// after unlocking via p.propose.
func (p *partition) decideLocked(d replica.Decisions) *wire.AlterPartitionRequest {
	for _, c := range d.Complete {
		if ch, ok := p.mu.reqs[c.ReqID]; ok {
			delete(p.mu.reqs, c.ReqID)
			ch <- c.Code
		}
	}
	if d.WakeFetchers || d.HWChanged {
		for w := range p.mu.waiters {
			w.wake()
		}
	}
	if d.HWChanged {
		p.b.ckptDirty.Store(true)
	}
	if d.ProposeISR == nil {
		return nil
	}
	p.logShrinkLocked(d.ProposeISR)
	req := &wire.AlterPartitionRequest{
		BrokerID: p.b.cfg.NodeID, Incarnation: p.b.cfg.Incarnation,
		Topic: p.key.topic, TopicID: p.mu.topicID, Partition: p.key.partition,
		LeaderEpoch: p.mu.r.LeaderEpoch(), PartitionEpoch: p.mu.r.PartitionEpoch(),
		NewISR: slices.Clone(d.ProposeISR),
	}
	// Each follower's incarnation as of the decision (KIP-903): the
	// controller refuses to add one whose process has changed since.
	for _, m := range p.mu.r.PendingMembers() {
		if m.ID != p.b.cfg.NodeID {
			req.Members = append(req.Members, wire.ISRMember{BrokerID: m.ID, Incarnation: m.Incarnation})
		}
	}
	return req
}

// topicID is the id of the topic incarnation this replica belongs to (fixed
// once opened: a re-created topic gets a new partition).
func (p *partition) topicID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.topicID
}

// decide runs fn under mu, carries out its decisions and sends any ISR proposal.
func (p *partition) decide(fn func(r *replica.Replica) replica.Decisions) {
	p.mu.Lock()
	if p.mu.stopped {
		p.mu.Unlock()
		return
	}
	prop := p.decideLocked(fn(p.mu.r))
	p.mu.Unlock()
	p.propose(prop)
}

func (p *partition) tick(now time.Time) {
	p.decide(func(r *replica.Replica) replica.Decisions { return r.Tick(now) })
}

// isrRetryBackoff is how long a refused ISR change stays pending before the
// replica may propose again, and the pause before an ISR change whose
// outcome is unknown is sent again.
const isrRetryBackoff = 100 * time.Millisecond

// propose sends an ISR change to the controller in the background. The change
// counts once the controller's answer or the resulting metadata arrives.
//
// Until then it stays pending, so the HW is computed over the larger of the
// committed and the proposed set. Only an answer that refuses the change
// itself (an ineligible replica, an invalid ISR) clears it. Any other failure
// leaves the outcome open: no answer or NotController (the change may still
// commit; a controller whose proposal timed out says NotController), or an
// answer naming newer epochs (the controller's state moved on, maybe by this
// very change, and metadata will bring it). The same request is then sent
// again until it is answered or the replica's state moves on: a retry of a
// committed change is answered with the committed state. Clearing the
// change instead would let the leader acknowledge records that a follower it
// just added, which the controller may elect, does not have.
func (p *partition) propose(req *wire.AlterPartitionRequest) {
	if req == nil {
		return
	}
	b := p.b
	if b.cfg.AlterPartition == nil {
		p.mu.Lock()
		p.decideLocked(p.mu.r.ProposalFailed())
		p.mu.Unlock()
		return
	}
	b.spawn(func() {
		p.lg.Info("proposing ISR change", "epoch", req.LeaderEpoch, "isr", req.NewISR)
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
			resp, err := b.cfg.AlterPartition(ctx, *req)
			cancel()
			if err == nil && resp.Err == wire.None {
				p.mu.Lock()
				r := p.mu.r
				if !p.mu.stopped && resp.LeaderEpoch == r.LeaderEpoch() && r.Role() == replica.RoleLeader {
					// ISRCommitted never proposes, so there is nothing to send.
					before := r.ISR()
					p.decideLocked(r.ISRCommitted(resp.ISR, resp.PartitionEpoch, b.cfg.Now()))
					p.countISRChangeLocked(before)
				}
				p.mu.Unlock()
				return
			}
			refused := err == nil && (resp.Err == wire.IneligibleReplica || resp.Err == wire.InvalidRequest)
			lv := slog.LevelWarn
			if resp.Err == wire.IneligibleReplica || attempt > 0 {
				// A restarted follower not yet unfenced is normal and
				// retried; a retry repeats what the first attempt logged.
				lv = slog.LevelDebug
			}
			p.lg.Log(b.ctx, lv, "ISR change not committed", "epoch", req.LeaderEpoch, "isr", req.NewISR,
				"err", err, "code", resp.Err, "refused", refused, "attempt", attempt)
			// Keep the change pending a little before it may be proposed or
			// sent again, so a refusal is not retried at every fetch.
			t := time.NewTimer(isrRetryBackoff)
			select {
			case <-t.C:
			case <-b.ctx.Done():
				t.Stop()
				return
			}
			p.mu.Lock()
			r := p.mu.r
			still := !p.mu.stopped && r.Role() == replica.RoleLeader && r.LeaderEpoch() == req.LeaderEpoch &&
				r.PartitionEpoch() == req.PartitionEpoch && slices.Equal(r.PendingISR(), req.NewISR)
			if still && refused {
				p.decideLocked(r.ProposalFailed())
			}
			p.mu.Unlock()
			if !still || refused {
				return // refused, or metadata or a leadership change settled it
			}
		}
	})
}

// syncedTo tells the replica that the log is durable below off, checked
// after an append as leader of epoch (replica.LocalDurable).
func (p *partition) syncedTo(epoch int32, off int64) {
	p.decide(func(r *replica.Replica) replica.Decisions { return r.LocalDurable(epoch, off) })
}

// syncInBackground makes the log durable below off and reports it, for
// appends no request waits on (acks=0, or a new leader's log end that its
// fetcher appended): the leader counts its own records toward the HW only
// once they are durable.
func (p *partition) syncInBackground(epoch int32, off int64) {
	b := p.b
	b.spawn(func() {
		if err := p.log.WaitDurable(b.ctx, off); err != nil {
			if b.ctx.Err() == nil && !errors.Is(err, segment.ErrClosed) {
				p.lg.Warn("background flush failed", "epoch", epoch, "offset", off, "err", err)
			}
			return
		}
		p.syncedTo(epoch, off)
	})
}

// register adds w to the partition's waiters.
func (p *partition) register(w *waiter) {
	p.mu.Lock()
	p.mu.waiters[w] = struct{}{}
	p.mu.Unlock()
}

func (p *partition) unregister(w *waiter) {
	p.mu.Lock()
	delete(p.mu.waiters, w)
	p.mu.Unlock()
}

// close stops the replica (failing parked requests), wakes waiters and
// closes the log; with deleteData it removes the directory.
func (p *partition) close(deleteData bool) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	p.mu.Lock()
	if !p.mu.stopped {
		p.decideLocked(p.mu.r.Stop())
		p.mu.stopped = true
		for w := range p.mu.waiters {
			w.wake()
		}
		p.startsChangedLocked() // a DeleteRecords waiting answers NotLeader now
	}
	p.mu.Unlock()
	if !deleteData && p.log.Failed() == nil {
		// The next open starts from it instead of replaying the log.
		if err := writeProducerSnapshot(p.fs(), p.dir, p.producers, p.log, p.hw()); err != nil && !errors.Is(err, segment.ErrClosed) {
			p.lg.Warn("writing the producer snapshot", "err", err)
		}
	}
	err := p.log.Close()
	if err == segment.ErrClosed {
		err = nil
	}
	if deleteData {
		// Through the log's file system (a test's MemFS too), then the
		// directory itself.
		rerr := removePartitionFiles(p.fs(), p.dir)
		if rerr == nil {
			rerr = os.RemoveAll(p.dir)
		}
		if rerr != nil && err == nil {
			err = rerr
		}
	}
	return err
}
