package broker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// fetcher is the follower side of the fetch session from this broker to one
// leader: one long-lived quic session carrying every partition this broker
// follows on that leader. Each request reports, per partition, the local LEO
// and last fetched epoch; the leader long-polls until it has data, a new HW
// or an error. When the partition set or the leader's address changes the
// session is closed and reopened with the new set (the in-flight long-poll
// would otherwise delay a new partition by up to ReplicaFetchMaxWait).
type fetcher struct {
	b      *Broker
	leader int32
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returns
	// changed is poked when the partition set or the leader's address changes.
	changed chan struct{}

	mu struct {
		sync.Mutex
		parts map[tp]*partition
	}
	// errUntil keeps a partition whose last answer was an error (typically
	// the leader not having applied the latest metadata yet) out of requests
	// for a moment, so it neither spins nor defeats the long-poll of the
	// others. Owned by the run goroutine.
	errUntil map[tp]time.Time
	// behind counts a partition's UnknownLeaderEpoch answers in a row (the
	// leader has not applied the metadata this follower has): the retry
	// comes sooner than after other errors (behindBackoff). Owned by the
	// run goroutine.
	behind map[tp]int
	// failedLogged: partitions whose failed log has been reported (once).
	failedLogged map[tp]bool
}

// fetchErrorBackoff is how long a partition sits out after an error answer.
const fetchErrorBackoff = 50 * time.Millisecond

// behindBackoff is how long a partition sits out after its n-th
// UnknownLeaderEpoch answer in a row (n from 0): 1 ms doubling up to
// fetchErrorBackoff. A new leader applies the metadata that made it one
// within milliseconds of its followers; sitting out the full error backoff
// held acks=all writes after a failover for 50 ms whenever the follower
// (often the controller itself) applied it first.
func behindBackoff(n int) time.Duration {
	return min(time.Millisecond<<min(n, 10), fetchErrorBackoff)
}

// diskFullFetchPause is how often a fetcher paused by a full disk looks
// again (besides being poked when the disk has room).
const diskFullFetchPause = time.Second

// diskFullHeadroom is the free space followers leave on a disk that counts
// as full (Broker.SetDiskFull): room for retention's producer snapshots and
// checkpoints, the node's 1 MiB probe and its 1 MiB disk reserve.
const diskFullHeadroom = 4 << 20

// fetchRoom is the most a fetch may bring: the configured maximum, or on a
// disk that counts as full what leaves diskFullHeadroom free (ok false when
// that is nothing, or the room cannot be told).
func (b *Broker) fetchRoom() (maxBytes int32, ok bool) {
	maxBytes = b.cfg.ReplicaFetchMaxBytes
	if !b.diskFull.Load() {
		return maxBytes, true
	}
	sp, err := segment.SpaceOf(b.fs(), b.cfg.DataDir)
	if err != nil || sp.Avail-diskFullHeadroom < 64<<10 {
		return 0, false
	}
	return int32(min(int64(maxBytes), sp.Avail-diskFullHeadroom)), true
}

// diskFullBackoff is how long a partition sits out after its append failed
// for lack of room.
const diskFullBackoff = time.Second

// attachFetcher adds p to the fetcher of leader, starting one if needed.
//
// The partition is added after b.mu is released, so a concurrent
// detachFetcher of another partition may find the fetcher empty in between,
// remove it and cancel it. Attach re-checks, under b.mu and after adding,
// that its fetcher is still the registered one, and otherwise starts over:
// from that check on the fetcher holds p, so detachFetcher (which removes a
// fetcher only when it is empty under b.mu) keeps it. A fetcher is in
// b.mu.fetchers exactly while it is not canceled (Close empties the map).
func (b *Broker) attachFetcher(leader int32, p *partition) {
	for {
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			return
		}
		f := b.mu.fetchers[leader]
		if f == nil {
			f = &fetcher{b: b, leader: leader, done: make(chan struct{}), changed: make(chan struct{}, 1)}
			f.ctx, f.cancel = context.WithCancel(b.ctx)
			f.mu.parts = make(map[tp]*partition)
			b.mu.fetchers[leader] = f
			b.wg.Add(1) // under b.mu with closed checked: Close waits for it
			go f.run()
		}
		b.mu.Unlock()
		if h := b.hooks.beforeFetcherAdd.Load(); h != nil {
			(*h)(leader, p.key)
		}
		f.mu.Lock()
		f.mu.parts[p.key] = p
		f.mu.Unlock()
		b.mu.Lock()
		live := b.mu.fetchers[leader] == f
		b.mu.Unlock()
		if live {
			f.poke()
			return
		}
		// Detached and canceled meanwhile: leave it, attach to a new one.
		f.mu.Lock()
		if f.mu.parts[p.key] == p {
			delete(f.mu.parts, p.key)
		}
		f.mu.Unlock()
	}
}

func (b *Broker) detachFetcher(leader int32, p *partition) {
	b.mu.Lock()
	f := b.mu.fetchers[leader]
	b.mu.Unlock()
	if f == nil {
		return
	}
	f.mu.Lock()
	if f.mu.parts[p.key] == p {
		delete(f.mu.parts, p.key)
	}
	empty := len(f.mu.parts) == 0
	f.mu.Unlock()
	if !empty {
		f.poke()
		return
	}
	b.mu.Lock()
	// Re-check under b.mu: attach may have added a partition meanwhile.
	f.mu.Lock()
	stillEmpty := len(f.mu.parts) == 0
	f.mu.Unlock()
	if stillEmpty && b.mu.fetchers[leader] == f {
		delete(b.mu.fetchers, leader)
	} else {
		stillEmpty = false
	}
	b.mu.Unlock()
	if stillEmpty {
		// Do not wait for it: the caller may hold the partition's appendMu,
		// which the fetcher takes to apply a response. It re-checks the
		// replica's role before touching the log.
		f.cancel()
	} else {
		f.poke()
	}
}

func (f *fetcher) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

// fetchTarget is one partition in one request, with what the request said.
type fetchTarget struct {
	p           *partition
	fetchOffset int64
	epoch       int32 // the leader epoch the request was built under
	adding      bool  // a copy for a reassignment (counted, and charged to the throttle)
}

func (f *fetcher) run() {
	defer f.b.wg.Done()
	defer close(f.done)
	lg := f.b.log.With("leader", f.leader)
	var sess *quic.Session
	defer func() {
		if sess != nil {
			sess.Close()
		}
	}()
	backoff := func() bool {
		t := time.NewTimer(50 * time.Millisecond)
		defer t.Stop()
		select {
		case <-f.ctx.Done():
			return false
		case <-f.changed:
			return true
		case <-t.C:
			return true
		}
	}
	f.errUntil = make(map[tp]time.Time)
	f.behind = make(map[tp]int)
	f.failedLogged = make(map[tp]bool)
	for f.ctx.Err() == nil {
		req, targets, retryAt := f.buildRequest(time.Now())
		if len(targets) == 0 {
			wait := time.Hour
			if !retryAt.IsZero() {
				wait = time.Until(retryAt)
			}
			t := time.NewTimer(wait)
			select {
			case <-f.ctx.Done():
				t.Stop()
				return
			case <-f.changed:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		if sess == nil {
			addr := f.b.addr(f.leader)
			ep := f.b.cfg.Endpoint
			if addr == "" || ep == nil {
				if !backoff() {
					return
				}
				continue
			}
			s, err := ep.OpenSession(quic.ExpectNode(f.ctx, f.leader), addr, wire.TypeReplicaFetch,
				wire.ReplicaFetchOpen{FollowerID: f.b.cfg.NodeID, Incarnation: f.b.cfg.Incarnation})
			if err != nil {
				lg.Debug("fetch session open failed", "addr", addr, "err", err)
				if !backoff() {
					return
				}
				continue
			}
			sess = s
		}
		resp, changed, err := f.roundTrip(sess, req)
		if changed || err != nil {
			if err != nil && f.ctx.Err() == nil {
				lg.Debug("fetch session failed", "err", err)
			}
			sess.Close()
			sess = nil
			if err != nil && !backoff() {
				return
			}
			continue
		}
		f.process(targets, resp)
	}
}

// roundTrip sends req and waits for its answer; it gives up early (changed)
// when the partition set changes.
func (f *fetcher) roundTrip(sess *quic.Session, req wire.ReplicaFetchRequest) (resp wire.ReplicaFetchResponse, changed bool, err error) {
	if err = sess.Send(f.ctx, wire.TypeReplicaFetch, req); err != nil {
		return resp, false, err
	}
	rctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	var poked atomic.Bool
	stop, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		select {
		case <-f.changed:
			poked.Store(true)
			cancel()
		case <-stop:
		}
	}()
	fr, err := sess.Recv(rctx)
	close(stop)
	<-exited
	if poked.Load() {
		return resp, true, nil // the answer (if any) is dropped; the next session refetches
	}
	if err != nil {
		return resp, false, err
	}
	// The records alias the session's frame buffer, valid until the next
	// Recv: process copies them into the log before the next round trip.
	if err = fr.DecodeNoCopy(&resp); err != nil {
		return resp, false, err
	}
	return resp, false, nil
}

// forgetDetachedLocked drops the run goroutine's per-partition state
// (backoffs, UnknownLeaderEpoch streaks, failed logs reported) of the
// partitions no longer followed here, so that it neither accumulates over
// reassignments and deletions nor carries over to a later attach. Called by
// the run goroutine with f.mu held.
func (f *fetcher) forgetDetachedLocked() {
	forgetUnfollowed(f.errUntil, f.mu.parts)
	forgetUnfollowed(f.behind, f.mu.parts)
	forgetUnfollowed(f.failedLogged, f.mu.parts)
}

// forgetUnfollowed deletes m's entries for partitions not in parts.
func forgetUnfollowed[V any](m map[tp]V, parts map[tp]*partition) {
	for k := range m {
		if parts[k] == nil {
			delete(m, k)
		}
	}
}

// buildRequest snapshots the partitions followed on this leader.
// Partitions sitting out an error backoff are skipped; retryAt is the
// earliest time one of them may rejoin (zero if none is waiting).
func (f *fetcher) buildRequest(now time.Time) (req wire.ReplicaFetchRequest, targets []fetchTarget, retryAt time.Time) {
	maxBytes, ok := f.b.fetchRoom()
	if !ok {
		return req, nil, now.Add(diskFullFetchPause) // Broker.SetDiskFull pokes
	}
	f.mu.Lock()
	parts := make([]*partition, 0, len(f.mu.parts))
	for _, p := range f.mu.parts {
		parts = append(parts, p)
	}
	f.forgetDetachedLocked()
	f.mu.Unlock()
	req = wire.ReplicaFetchRequest{MaxWaitMs: int32(f.b.cfg.ReplicaFetchMaxWait / time.Millisecond),
		MaxBytes: maxBytes}
	targets = make([]fetchTarget, 0, len(parts))
	for _, p := range parts {
		if until, ok := f.errUntil[p.key]; ok {
			if now.Before(until) {
				if retryAt.IsZero() || until.Before(retryAt) {
					retryAt = until
				}
				continue
			}
			delete(f.errUntil, p.key)
		}
		p.mu.Lock()
		r := p.mu.r
		ok := !p.mu.stopped && r.Role() == replica.RoleFollower && r.Leader() == f.leader
		epoch, hw, topicID := r.LeaderEpoch(), r.HW(), p.mu.topicID
		// The replica's log start, as DescribeReplica reports it: it moves
		// once a deletion has finished (the log's own moves earlier).
		start := r.LogStart()
		adding := p.mu.beingAdded && !slices.Contains(r.ISR(), f.b.cfg.NodeID)
		p.mu.Unlock()
		if !ok {
			continue
		}
		if adding {
			if w := f.b.throttle.wait(now); w > 0 {
				if at := now.Add(w); retryAt.IsZero() || at.Before(retryAt) {
					retryAt = at
				}
				continue
			}
		}
		if err := p.log.Failed(); err != nil {
			// Its end offset may include records a failed flush lost: fetching
			// from there would tell the leader they are replicated. The
			// replica stays out until its log is reopened (a node stops on a
			// failed log and recovers it on restart); the leader shrinks the
			// ISR meanwhile.
			if !f.failedLogged[p.key] {
				f.failedLogged[p.key] = true
				p.lg.Error("follower stops fetching: its log failed", "err", err)
			}
			continue
		}
		leo := p.log.LogEndOffset()
		// The leader counts the fetch offset toward the HW, so it must be
		// durable under the fsync policy. This fetcher's own appends are
		// (process syncs them before the next request), but the fetcher of a
		// previous leader or epoch of this partition may have appended
		// records and still be flushing them when leadership moved here.
		if err := p.log.WaitDurable(f.ctx, leo); err != nil {
			if f.ctx.Err() == nil {
				p.lg.Debug("follower log end not durable yet", "offset", leo, "err", err)
				f.errUntil[p.key] = now.Add(fetchErrorBackoff)
				if retryAt.IsZero() || f.errUntil[p.key].Before(retryAt) {
					retryAt = f.errUntil[p.key]
				}
			}
			continue
		}
		req.Parts = append(req.Parts, wire.ReplicaFetchPartition{Topic: p.key.topic, TopicID: topicID, Partition: p.key.partition,
			FetchOffset: leo, LastFetchedEpoch: p.log.LatestEpoch(), CurrentLeaderEpoch: epoch, HighWatermark: hw, LogStart: &start})
		targets = append(targets, fetchTarget{p: p, fetchOffset: leo, epoch: epoch, adding: adding})
	}
	if len(targets) > 0 && !retryAt.IsZero() {
		// A partition sitting out rejoins with the next request: the
		// long poll of the others must not outlast its wait (after an
		// UnknownLeaderEpoch, a millisecond or so).
		ms := int32((retryAt.Sub(now) + time.Millisecond - 1) / time.Millisecond)
		req.MaxWaitMs = max(min(req.MaxWaitMs, ms), 1)
	}
	return req, targets, retryAt
}

// process applies one response in three steps, so that the fsyncs of its
// partitions overlap instead of adding up on the path to the next fetch
// (whose offsets move the leader's HW): append every partition's records
// (each under its appendMu), wait until all of them are durable, then
// record the new log end offsets and HWs in the replicas.
func (f *fetcher) process(targets []fetchTarget, resp wire.ReplicaFetchResponse) {
	byKey := make(map[tp]fetchTarget, len(targets))
	for _, t := range targets {
		byKey[t.p.key] = t
	}
	var done []fetchedPart
	for i := range resp.Parts {
		pr := &resp.Parts[i]
		t, ok := byKey[tp{pr.Topic, pr.Partition}]
		if !ok {
			continue
		}
		if t.adding {
			f.b.throttle.charge(len(pr.Records), time.Now())
			f.b.counters.reassignCopyBytes.Add(uint64(len(pr.Records)))
		}
		if fp, ok := f.appendPartition(t, pr); ok {
			done = append(done, fp)
		}
		switch pr.Err {
		case wire.None, wire.OffsetOutOfRange:
			delete(f.behind, t.p.key)
		case wire.UnknownLeaderEpoch:
			wait := behindBackoff(f.behind[t.p.key])
			f.behind[t.p.key]++
			f.errUntil[t.p.key] = time.Now().Add(wait)
		default:
			delete(f.behind, t.p.key)
			f.errUntil[t.p.key] = time.Now().Add(fetchErrorBackoff)
		}
	}
	f.syncAll(done)
	for _, fp := range done {
		if fp.t.p.log.Failed() == nil { // a failed flush: not this replica's records
			f.finishPartition(fp)
		}
	}
	for _, fp := range done {
		// The leader's retention moved its log start: follow it (retention.go).
		if p := fp.t.p; fp.leaderStart > p.log.LogStartOffset() && p.log.Failed() == nil {
			f.raiseLogStart(fp)
		}
	}
}

// raiseLogStart runs p.raiseLogStart for fp beside the fetch loop, at most
// one at a time per partition (a later answer tries again): its producer
// snapshot and deletion do disk I/O, and the loop must go on fetching (the
// leader's HW moves with this replica's fetch offset) for every partition.
func (f *fetcher) raiseLogStart(fp fetchedPart) {
	p := fp.t.p
	if !p.raising.CompareAndSwap(false, true) {
		return
	}
	f.b.wg.Add(1) // f.run's own count is held: Close waits for this too
	go func() {
		defer f.b.wg.Done()
		defer p.raising.Store(false)
		if err := p.raiseLogStart(f.ctx, f.leader, fp.t.epoch, fp.leaderStart); err != nil && f.ctx.Err() == nil {
			p.lg.Warn("raising the log start to the leader's", "offset", fp.leaderStart, "err", err)
		}
	}()
}

// fetchedPart is a partition whose records from one response are appended
// (not yet known durable) and whose replica state is not yet updated.
type fetchedPart struct {
	t        fetchTarget
	leo      int64 // the log end offset after the append
	leaderHW int64
	// leaderStart is the leader's log start offset.
	leaderStart int64
	appended    bool
}

// appendPartition handles one partition of a response: errors, divergence
// (truncation) and appending records. ok says the replica state is still to
// be updated by finishPartition.
func (f *fetcher) appendPartition(t fetchTarget, pr *wire.ReplicaFetchPartitionResponse) (fetchedPart, bool) {
	p := t.p
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !f.stillFollowing(t) || p.log.LogEndOffset() != t.fetchOffset {
		return fetchedPart{}, false // stale answer: the replica moved on
	}
	switch pr.Err {
	case wire.None:
	case wire.OffsetOutOfRange:
		// Our log is outside the leader's: past its end, truncate to it;
		// otherwise (below its start, or older than any epoch it knows)
		// restart at its log start.
		if t.fetchOffset > pr.LogEnd {
			f.truncate(p, pr.LogEnd, false)
		} else {
			f.truncate(p, pr.LogStart, true)
		}
		return fetchedPart{}, false
	default:
		p.lg.Debug("fetch error", "code", pr.Err, "epoch", t.epoch)
		return fetchedPart{}, false
	}
	if pr.DivergingEpoch >= 0 {
		off, fully := replica.TruncationOffset(p.log, p.log.LogStartOffset(), t.fetchOffset,
			pr.DivergingEpoch, pr.DivergingEndOffset)
		p.lg.Info("log diverges from leader", "epoch", pr.DivergingEpoch, "offset", pr.DivergingEndOffset, "truncate_to", off)
		f.truncate(p, off, fully)
		return fetchedPart{}, false
	}
	fp := fetchedPart{t: t, leo: t.fetchOffset, leaderHW: pr.HighWatermark, leaderStart: pr.LogStart}
	if len(pr.Records) == 0 {
		return fp, true
	}
	info, err := p.log.AppendVerbatim(f.ctx, pr.Records)
	leo := info.LastOffset + 1
	if err != nil {
		// A failed append may have stored a prefix of the batches. The next
		// fetch reports the log end to the leader, which counts it toward
		// the HW, so that prefix is synced and recorded like a whole answer.
		leo = p.log.LogEndOffset()
	}
	now := f.b.cfg.Now()
	_ = walkHeaders(pr.Records, func(h segment.Header) {
		if h.BaseOffset+int64(h.LastOffsetDelta) < leo {
			p.producers.update(h.ProducerID, h.ProducerEpoch, h.BaseSequence, h.LastOffsetDelta, h.BaseOffset, seenAt(h, now))
		}
	})
	if err != nil {
		// Fetching the same bytes again at once would fail the same way: a
		// full disk frees up on an operator's time, not the next round trip's.
		wait := fetchErrorBackoff
		if errors.Is(err, segment.ErrDiskFull) {
			wait = diskFullBackoff
		}
		f.errUntil[p.key] = time.Now().Add(wait)
		p.lg.Error("follower append failed", "offset", leo, "retry_in", wait, "err", err)
	}
	if leo == t.fetchOffset {
		return fetchedPart{}, false
	}
	fp.leo, fp.appended = leo, true
	return fp, true
}

// stillFollowing reports whether t's replica still follows this fetcher's
// leader in the epoch the request was built under.
func (f *fetcher) stillFollowing(t fetchTarget) bool {
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.mu.r
	return !p.mu.stopped && r.Role() == replica.RoleFollower && r.Leader() == f.leader && r.LeaderEpoch() == t.epoch
}

// syncAll applies the fsync policy to every appended partition, the
// partitions' flushes running concurrently: the LEO the next fetch reports
// is what the leader counts toward the HW.
func (f *fetcher) syncAll(parts []fetchedPart) {
	flush := func(fp fetchedPart) {
		if err := fp.t.p.log.WaitDurable(f.ctx, fp.leo); err != nil {
			fp.t.p.lg.Error("follower sync failed", "offset", fp.leo, "err", err)
		}
	}
	var wg sync.WaitGroup
	var here *fetchedPart // flushed on this goroutine, the others beside it
	for i := range parts {
		switch {
		case !parts[i].appended:
		case here == nil:
			here = &parts[i]
		default:
			wg.Add(1)
			go func(fp fetchedPart) {
				defer wg.Done()
				flush(fp)
			}(parts[i])
		}
	}
	if here != nil {
		flush(*here)
	}
	wg.Wait()
}

// finishPartition records an applied response in the replica: its new log
// end offset and the leader's HW.
func (f *fetcher) finishPartition(fp fetchedPart) {
	p := fp.t.p
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if !f.stillFollowing(fp.t) || p.log.LogEndOffset() < fp.leo {
		return // moved on while the flush ran
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if fp.leo > p.mu.r.LEO() {
		p.mu.r.LocalAppend(fp.leo)
	}
	if p.mu.r.FollowerHW(fp.leaderHW) {
		f.b.ckptDirty.Store(true)
		for w := range p.mu.waiters { // consumers reading from this follower
			w.wake()
		}
	}
	// Batches below the HW are stable now, also when the HW moved without
	// records (the leader's last advance always comes so).
	p.producers.advance(p.mu.r.HW())
}

// replayProducers rebuilds p's producer state from its log, whose end is leo.
func (f *fetcher) replayProducers(p *partition, leo int64) (*producerState, error) {
	if h := f.b.hooks.producerReplay.Load(); h != nil {
		if err := (*h)(); err != nil {
			return nil, err
		}
	}
	// From the snapshot when it still applies: it also holds the producers
	// whose batches retention deleted.
	return replayUntilStartHolds(p.log, func() (*producerState, error) {
		return openProducers(p.fs(), p.dir, p.log, min(p.hw(), leo), f.b.cfg.Now(), &f.b.counters.producerReplayBatches, p.lg)
	})
}

// replayUntilStartHolds runs replay (which reads the producer snapshot,
// then the log from where it ends) until lg's log start is the same after
// it as before. A retention pass deletes without the partition's appendMu,
// which the replay's caller holds, so it may move the log start between
// the replay's read of the snapshot and its read of the log: an old
// snapshot then misses the producers of the deleted batches (or the log
// read fails). The pass writes the snapshot for the new start before
// moving it, so the next try reads one that matches; the log start only
// rises while appendMu is held and is bounded by the log end, so the tries
// end.
func replayUntilStartHolds(lg *segment.Log, replay func() (*producerState, error)) (*producerState, error) {
	for {
		start := lg.LogStartOffset()
		s, err := replay()
		if lg.LogStartOffset() == start {
			return s, err
		}
	}
}

// truncate cuts the follower's log (appendMu held) and rolls its producer
// state back to match.
func (f *fetcher) truncate(p *partition, off int64, fully bool) {
	ctx := f.ctx
	p.truncations.Add(1) // before the log changes: consumer reads on this follower check it
	var err error
	if fully {
		err = p.log.TruncateFullyAndStartAt(ctx, off)
	} else {
		_, err = p.log.TruncateTo(ctx, off)
	}
	if err != nil {
		p.lg.Error("follower truncation failed", "offset", off, "err", err)
		return
	}
	// Roll the producer state back with the log: from what it remembers
	// when the cut is above the HW (the usual divergent tail), else (or
	// when the log is now empty) by replaying the log.
	if leo := p.log.LogEndOffset(); fully || leo == p.log.LogStartOffset() || !p.producers.truncate(leo) {
		if ps, err := f.replayProducers(p, leo); err == nil {
			p.producers = ps
		} else {
			// Keeping the old state would answer retries of truncated
			// batches as duplicates at offsets that now hold other records.
			p.lg.Error("rebuilding producer state failed: refusing idempotent writes", "err", err)
			p.producers = unknownProducerState(err)
		}
	}
	p.mu.Lock()
	p.mu.r.Truncated(p.log.LogStartOffset(), p.log.LogEndOffset())
	p.mu.Unlock()
	f.b.ckptDirty.Store(true)
	p.lg.Info("follower truncated", "offset", p.log.LogEndOffset(), "fully", fully)
}
