package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// fetchCall is one fetch in flight to one leader.
type fetchCall struct {
	leader  int32
	addr    string          // the leader's
	epochs  map[int32]int32 // partition -> leader epoch it was sent with
	topic   string
	started time.Time
	cancel  context.CancelFunc
}

type fetchResult struct {
	call  *fetchCall
	addr  string
	topic string
	parts []fetchedPart
	resp  *wire.FetchResponse
	err   error
}

type fetchedPart struct {
	cp  *cpart
	gen int
	off int64
}

// Poll returns the next records of the assigned partitions. It waits until a
// fetch answers with records, an error that needs the caller occurs, about
// MaxWait passes with nothing new (returning no records and a nil error), or
// ctx ends. It never returns records together with an error: records
// fetched along with an error (another partition's, or a corrupt record
// after them) are returned first, with a nil error, and the error comes
// with the next call.
func (cs *Consumer) Poll(ctx context.Context) ([]Message, error) {
	if cs.closed {
		return nil, errors.New("client: consumer closed")
	}
	if err := cs.owed; err != nil {
		cs.owed = nil
		return nil, err
	}
	if len(cs.order) == 0 {
		return nil, ErrNoAssignment
	}
	start := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if err := cs.resolveSeeks(ctx); err != nil {
			return nil, err
		}
		if err := cs.checkMissingTopics(ctx, time.Now()); err != nil {
			return nil, err
		}
		wait := cs.startFetches(time.Now())
		cs.watchLeaders(time.Now())
		if len(cs.inflight) == 0 {
			if wait <= 0 {
				wait = cs.cfg.RetryBackoff
			}
			timer.Reset(wait)
		} else {
			timer.Reset(min(leaderCheckEvery, max(cs.cfg.MaxWait+cs.cfg.MaxWait/2-time.Since(start), time.Millisecond), cs.untilOverdue(time.Now())))
		}
		select {
		case r := <-cs.results:
			msgs, err := cs.apply(r, nil)
			for more := true; more && err == nil; {
				select {
				case r := <-cs.results:
					msgs, err = cs.apply(r, msgs)
				default:
					more = false
				}
			}
			if len(msgs) > 0 {
				// Their positions have moved past them: a caller that
				// drops results with an error would never see them.
				cs.owed = err
				return msgs, nil
			}
			if err != nil {
				return nil, err
			}
		case <-timer.C:
			cs.checkLeaders(true)
		case <-cs.c.meta.changed():
			cs.checkLeaders(false)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if time.Since(start) >= cs.cfg.MaxWait {
			return nil, nil
		}
	}
}

// resolveSeeks turns pending SeekBeginning/SeekEnd positions into offsets.
// A partition whose leader cannot answer now (offline, moved) stays pending
// and is asked again after a backoff: retrying it here until ctx ends would
// stall every other partition's records.
func (cs *Consumer) resolveSeeks(ctx context.Context) error {
	type key struct {
		topic string
		ts    int64
	}
	now := time.Now()
	groups := map[key][]*cpart{}
	for _, cp := range cs.order {
		if cp.pos < 0 && !now.Before(cp.notBefore) {
			groups[key{cp.tp.Topic, cp.pos}] = append(groups[key{cp.tp.Topic, cp.pos}], cp)
		}
	}
	for k, cps := range groups {
		parts := make([]int32, len(cps))
		for i, cp := range cps {
			parts[i] = cp.tp.Partition
		}
		offs, _, err := cs.c.listOffsets(ctx, k.topic, parts, k.ts, false)
		if err != nil {
			return err
		}
		for _, cp := range cps {
			if o, ok := offs[cp.tp.Partition]; ok {
				cp.pos, cp.failures = o, 0
			} else {
				cs.backoff(cp, now)
			}
		}
	}
	return nil
}

// missingTopicCheck is how often Poll asks a node about an assigned topic
// that the metadata does not list.
const missingTopicCheck = 2 * time.Second

// checkMissingTopics returns wire.TopicAuthorizationFailed for an assigned
// topic the metadata does not list because the client's principal may not
// describe it (a cluster enforcing ACLs leaves it out; its partitions would
// wait for a leader without a word), asking a node about each such topic
// at most every missingTopicCheck. A topic that does not exist (yet) is
// waited for, as before.
func (cs *Consumer) checkMissingTopics(ctx context.Context, now time.Time) error {
	snap := cs.c.meta.current()
	if snap == nil {
		return nil
	}
	for _, cp := range cs.order {
		topic := cp.tp.Topic
		if _, ok := snap.topics[topic]; ok {
			continue
		}
		if last, ok := cs.missingChecked[topic]; ok && now.Sub(last) < missingTopicCheck {
			continue
		}
		if cs.missingChecked == nil {
			cs.missingChecked = map[string]time.Time{}
		}
		cs.missingChecked[topic] = now
		if err := cs.c.missingTopic(ctx, topic); ErrorCode(err) == wire.TopicAuthorizationFailed {
			return fmt.Errorf("client: %s: %w", cp.tp, err)
		}
	}
	return nil
}

// startFetches sends a fetch to each leader for its idle partitions and
// returns how long until a partition in backoff may be fetched again.
func (cs *Consumer) startFetches(now time.Time) time.Duration {
	snap := cs.c.meta.current()
	if snap == nil {
		ctx, cancel := context.WithTimeout(cs.ctx, cs.c.cfg.MetadataTimeout)
		err := cs.c.meta.refresh(ctx)
		cancel()
		if err != nil {
			return cs.cfg.RetryBackoff
		}
		snap = cs.c.meta.current()
	}
	type key struct{ addr, topic string }
	groups := map[key][]*cpart{}
	var wait time.Duration
	for _, cp := range cs.order {
		if cp.fetching || cp.pos < 0 {
			continue
		}
		if d := cp.notBefore.Sub(now); d > 0 {
			if wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		ld, ok := snap.leaderOf(cp.tp.Topic, cp.tp.Partition)
		if !ok {
			cs.backoff(cp, now)
			cs.c.meta.refreshIfOlder(cs.cfg.RetryBackoff)
			continue
		}
		k := key{cs.readFrom(snap, cp, ld, now), cp.tp.Topic}
		groups[k] = append(groups[k], cp)
	}
	for k, cps := range groups {
		req := &wire.FetchRequest{
			MaxWaitMs: int32(cs.cfg.MaxWait / time.Millisecond),
			MinBytes:  cs.cfg.MinBytes,
			MaxBytes:  cs.cfg.MaxBytes,
			Topic:     k.topic,
			Rack:      cs.rack(now),
		}
		fps := make([]fetchedPart, len(cps))
		ctx, cancel := context.WithTimeout(cs.ctx, cs.cfg.MaxWait+cs.c.cfg.RequestTimeout)
		call := &fetchCall{addr: k.addr, epochs: map[int32]int32{}, topic: k.topic, started: now, cancel: cancel}
		for i, cp := range cps {
			pm, _ := snap.partition(cp.tp.Topic, cp.tp.Partition)
			req.Parts = append(req.Parts, wire.FetchPartition{Partition: cp.tp.Partition, Offset: cp.pos, MaxBytes: cs.cfg.PartitionMaxBytes,
				LeaderEpoch: pm.LeaderEpoch, LastFetchedEpoch: cp.lastEpoch()})
			fps[i] = fetchedPart{cp: cp, gen: cp.gen, off: cp.pos}
			cp.fetching = true
			call.leader = pm.Leader
			call.epochs[cp.tp.Partition] = pm.LeaderEpoch
		}
		cs.inflight[call] = struct{}{}
		cs.wg.Add(1)
		go func(addr, topic string) {
			defer cs.wg.Done()
			defer cancel()
			var resp wire.FetchResponse
			err := cs.c.call(ctx, addr, wire.TypeFetch, req, &resp)
			select {
			case cs.results <- fetchResult{call: call, addr: addr, topic: topic, parts: fps, resp: &resp, err: err}:
			case <-cs.ctx.Done():
			}
		}(k.addr, k.topic)
	}
	return wait
}

// leaderCheckEvery is how often Poll looks for fetches stuck at a replaced leader.
const leaderCheckEvery = 250 * time.Millisecond

// fetchOverdue is how long past MaxWait a fetch may stay unanswered before
// its leader is suspected: a live leader answers a long poll at MaxWait.
const fetchOverdue = 50 * time.Millisecond

// overdue reports whether call has been outstanding past MaxWait + fetchOverdue.
func (cs *Consumer) overdue(call *fetchCall, now time.Time) bool {
	return now.Sub(call.started) > cs.cfg.MaxWait+fetchOverdue
}

// untilOverdue is how long until the next fetch in flight becomes overdue
// (leaderCheckEvery when none is about to): Poll wakes then to start looking
// for the partition's new leader at once.
func (cs *Consumer) untilOverdue(now time.Time) time.Duration {
	wait := leaderCheckEvery
	for call := range cs.inflight {
		if d := call.started.Add(cs.cfg.MaxWait + fetchOverdue).Sub(now); d > 0 {
			wait = min(wait, d+time.Millisecond)
		}
	}
	return wait
}

// watchLeaders keeps one metadata watch (metadata.watch) going while fetches
// are in flight: a leader that dies is replaced when the controller fences
// it, and the watch brings that news the moment a node applies it instead
// of after the fetch is overdue. It avoids the leaders of overdue fetches
// and prefers a node that serves none of this consumer's fetches: a dead
// node would hold the watch unanswered.
func (cs *Consumer) watchLeaders(now time.Time) {
	if len(cs.inflight) == 0 {
		return // nothing to watch for
	}
	var avoid []string
	for call := range cs.inflight {
		if cs.overdue(call, now) {
			avoid = append(avoid, call.addr)
		}
	}
	if len(avoid) == 0 && cs.c.meta.watching() {
		return // a watch runs and no node is suspected: watch would return at once
	}
	spare := make([]string, 0, len(cs.inflight))
	for call := range cs.inflight {
		spare = append(spare, call.addr)
	}
	cs.c.meta.watch(avoid, spare)
}

// checkLeaders abandons fetches sent to a leader the metadata says has been
// replaced (their partitions are then fetched from the new leader), keeps
// the metadata watch going (watchLeaders), and with refresh polls for fresher
// metadata while a fetch is overdue (a dead leader never answers), giving
// each node it asks only fetchOverdue before asking the next too (the first
// may be the dead leader).
func (cs *Consumer) checkLeaders(refresh bool) {
	snap := cs.c.meta.current()
	now := time.Now()
	cs.watchLeaders(now)
	for call := range cs.inflight {
		if refresh && cs.overdue(call, now) {
			cs.c.meta.refreshIfOlderHedged(leaderCheckEvery, min(fetchOverdue, cs.c.cfg.HedgeDelay))
		}
		for p, epoch := range call.epochs {
			if pm, ok := snap.partition(call.topic, p); ok && (pm.LeaderEpoch > epoch || pm.Leader != call.leader) {
				call.cancel()
				break
			}
		}
	}
}

func (cs *Consumer) backoff(cp *cpart, now time.Time) {
	cp.failures++
	d := cs.cfg.RetryBackoff
	for i := 1; i < cp.failures && d < cs.cfg.RetryBackoffMax; i++ {
		d *= 2
	}
	cp.notBefore = now.Add(min(d, cs.cfg.RetryBackoffMax))
}

// apply turns one fetch answer into messages (appended to out) and new positions.
func (cs *Consumer) apply(r fetchResult, out []Message) ([]Message, error) {
	delete(cs.inflight, r.call)
	now := time.Now()
	byPart := map[int32]*wire.FetchPartitionResponse{}
	if r.err == nil {
		for i := range r.resp.Parts {
			byPart[r.resp.Parts[i].Partition] = &r.resp.Parts[i]
		}
	}
	var firstErr error
	for _, fp := range r.parts {
		cp := fp.cp
		cp.fetching = false
		if fp.gen != cp.gen || cs.parts[cp.tp] != cp {
			continue // sought or unassigned meanwhile
		}
		pr := byPart[cp.tp.Partition]
		if cs.fromFollower(cp, r, pr, now) {
			continue
		}
		if r.err != nil || pr == nil {
			cs.c.log.Debug("fetch failed", "topic", cp.tp.Topic, "partition", cp.tp.Partition, "addr", r.addr, "err", r.err)
			cs.backoff(cp, now)
			cs.c.meta.refreshIfOlder(cs.cfg.RetryBackoff)
			continue
		}
		switch code := pr.Err; {
		case code == wire.None && pr.Diverging != nil:
			// The leader's log parts from the records returned: stay
			// put and let the application choose where to go on.
			if firstErr == nil {
				firstErr = &LogTruncatedError{TopicPartition: cp.tp, Position: fp.off, LastFetchedEpoch: cp.lastEpoch(),
					DivergingEpoch: pr.Diverging.Epoch, DivergingEndOffset: cp.divergence(fp.off, *pr.Diverging)}
			}
			cs.c.log.Debug("log truncated below the consumer's position", "topic", cp.tp.Topic, "partition", cp.tp.Partition,
				"offset", fp.off, "epoch", cp.lastEpoch(), "diverging_epoch", pr.Diverging.Epoch,
				"diverging_end_offset", pr.Diverging.EndOffset, "addr", r.addr)
			cs.backoff(cp, now)
		case code == wire.None:
			cp.failures, cp.behind = 0, 0
			if t := r.resp.ThrottleMs; t > 0 {
				// Over the principal's quota: a fetch sooner would be
				// held back by the node (and look overdue here).
				cp.notBefore = now.Add(time.Duration(t) * time.Millisecond)
			}
			cp.hw = max(cp.hw, pr.HighWatermark) // -1: the leader does not know it yet
			if pr.LogStart >= 0 {
				cp.lso = pr.LogStart
			}
			var next int64
			var err error
			out, next, err = decodeFetched(cp.tp, pr.Records, fp.off, out, cp.entered)
			cp.pos = max(cp.pos, next)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		case code == wire.OffsetOutOfRange && cs.cfg.OnOffsetReset != nil && pr.LogStart > fp.off:
			// Deleted by retention: go on at the log start.
			cs.c.log.Debug("position below the log start: resetting to it", "topic", cp.tp.Topic,
				"partition", cp.tp.Partition, "offset", fp.off, "log_start", pr.LogStart)
			cs.seek(cp, pr.LogStart)
			cs.cfg.OnOffsetReset(cp.tp, fp.off, pr.LogStart)
		case code == wire.OffsetOutOfRange:
			if firstErr == nil {
				firstErr = &OffsetOutOfRangeError{TopicPartition: cp.tp, Requested: fp.off, Start: pr.LogStart, End: max(cp.hw, pr.HighWatermark)}
			}
			cs.backoff(cp, now)
		case code == wire.UnknownLeaderEpoch && cp.behind < behindRefreshAfter && r.call != nil &&
			cs.c.meta.current().leads(cp.tp.Topic, cp.tp.Partition, r.call.leader, r.call.epochs[cp.tp.Partition]):
			// The leader our metadata names has not applied it yet (it
			// will within moments): fetch again after 1 ms doubling
			// without a refresh, a few times (then as any refusal: maybe
			// ours is what changed since).
			cp.behind++
			cs.c.log.Debug("fetch reached its leader before the leader's own metadata did; retrying soon", "topic", cp.tp.Topic,
				"partition", cp.tp.Partition, "addr", r.addr, "tries", cp.behind)
			cp.notBefore = now.Add(behindRetry(cp.behind, cs.cfg.RetryBackoff))
		case code.Retriable():
			cs.c.log.Debug("fetch refused, retrying", "topic", cp.tp.Topic, "partition", cp.tp.Partition, "addr", r.addr, "err", code)
			cs.backoff(cp, now)
			cs.c.meta.refreshIfOlder(cs.cfg.RetryBackoff)
		default:
			if firstErr == nil {
				firstErr = fmt.Errorf("client: fetch %s from %s: %w", cp.tp, r.addr, code.Err(pr.Message))
			}
			cs.backoff(cp, now)
		}
	}
	return out, firstErr
}

// decodeFetched appends the records of whole batches to out, skipping
// records below from, and returns the offset after the last whole batch (from
// if none). A partial batch at the end (a fetch cut at MaxBytes) is ignored.
// At a corrupt batch or record it stops with an error, returning the offset
// after the last record it returned: the position never passes a record that
// was not delivered.
//
// entered (nil: none) learns the leader epoch of each batch the position
// moves into, with the first offset at or above from it covers, before the
// position passes that offset: also a batch the log cleaner emptied, whose
// offsets the position passes without a record (the last fetched epoch is
// the last batch's, as in Kafka, or a consumer past a later epoch's
// compacted batches would still claim an older one).
func decodeFetched(tp TopicPartition, records []byte, from int64, out []Message, entered func(epoch int32, start int64)) ([]Message, int64, error) {
	out = slices.Grow(out, countRecords(records))
	next := from
	prevLast := int64(-1) // the last offset of the previous batch
	// The iterator reuses its Headers slice from record to record: messages
	// get theirs from hdrs, each capped so that later appends never reach it.
	var hdrs []segment.RecordHeader
	_, err := segment.SplitBatches(records, func(b segment.Batch) error {
		// Offsets only grow along a log; a batch that goes back (each batch's
		// CRC leaves its base offset out) would deliver records out of order.
		if b.BaseOffset() <= prevLast {
			return fmt.Errorf("%w: batch at offset %d follows one ending at offset %d", segment.ErrCorrupt, b.BaseOffset(), prevLast)
		}
		prevLast = b.LastOffset()
		if b.LastOffset() < from {
			return nil
		}
		epoch, appended := b.LeaderEpoch(), b.LogAppendTime()
		told := false
		tell := func() {
			if !told && entered != nil {
				entered(epoch, max(b.BaseOffset(), from))
			}
			told = true
		}
		it := b.Iter()
		for it.Next() {
			r := it.Record()
			if r.Offset < from {
				continue
			}
			tell()
			var h []segment.RecordHeader
			if len(r.Headers) > 0 {
				i := len(hdrs)
				hdrs = append(hdrs, r.Headers...)
				h = hdrs[i:len(hdrs):len(hdrs)]
			}
			out = append(out, Message{
				Topic: tp.Topic, Partition: tp.Partition, Offset: r.Offset,
				Timestamp: time.UnixMilli(r.Timestamp).UTC(), Key: r.Key, Value: r.Value, Headers: h,
				LeaderEpoch: epoch, LogAppendTime: appended,
			})
			next = r.Offset + 1
		}
		if err := it.Err(); err != nil {
			return err // the position stays at the bad record: never skip past it
		}
		tell()
		next = b.LastOffset() + 1
		return nil
	})
	if err != nil && !errors.Is(err, segment.ErrTornTail) {
		return out, next, fmt.Errorf("client: %s: %w", tp, err)
	}
	return out, next, nil
}

// countRecords sums the record counts of the batch headers in buf (no CRC
// checks: it only sizes the output), at most one per 16 bytes. A batch of
// no records (the log cleaner may leave one: segment.AttrCompacted) adds
// nothing and the count goes on past it.
func countRecords(buf []byte) int {
	n := 0
	for len(buf) >= segment.HeaderSize {
		h, err := segment.ParseHeader(buf)
		size := 12 + int(h.Length)
		if err != nil || h.Length <= 0 || size > len(buf) {
			break
		}
		if h.RecordCount > 0 {
			n += min(int(h.RecordCount), size/16)
		}
		buf = buf[size:]
	}
	return n
}
