package broker

import (
	"context"
	"slices"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// serveReplicaFetch is the leader side of a follower's fetch session: it
// answers each ReplicaFetchRequest on the stream in turn. Every request
// records the follower's progress (which may advance the HW and complete
// parked produces, or propose the follower's return to the ISR); the answer
// is held until some partition has records, an error or a divergence, an HW
// the follower has not seen has waited ReplicaHWDelay for records to ride
// with, or MaxWaitMs passes.
func (b *Broker) serveReplicaFetch(ctx context.Context, peer quic.Peer, first quic.Frame, s *quic.Session) error {
	var open wire.ReplicaFetchOpen
	if err := first.Decode(&open); err != nil {
		return err
	}
	if err := peer.CheckNodeID("follower id", open.FollowerID); err != nil {
		return err
	}
	lg := b.log.With("follower", open.FollowerID, "incarnation", open.Incarnation)
	lg.Debug("fetch session opened", "addr", peer.Addr)
	w := newWaiter()
	for {
		fr, err := s.Recv(ctx)
		if err != nil {
			return nil // the follower closed or reopened the session
		}
		var req wire.ReplicaFetchRequest
		if err := fr.Decode(&req); err != nil {
			return err
		}
		resp, views := b.answerReplicaFetch(ctx, open, &req, w)
		err = s.Send(ctx, wire.TypeReplicaFetch, resp)
		releaseAll(views)
		if err != nil {
			return nil
		}
		b.counters.replicaFetchResponses.Add(1)
		b.counters.replicaFetched(&resp)
	}
}

func releaseAll(views []*segment.View) {
	for _, v := range views {
		v.Release()
	}
}

// replicaFetchPart is one partition of a follower request being answered.
type replicaFetchPart struct {
	p   *partition
	req *wire.ReplicaFetchPartition
	chk replica.FetchCheck
}

func (b *Broker) answerReplicaFetch(ctx context.Context, open wire.ReplicaFetchOpen, req *wire.ReplicaFetchRequest, w *waiter) (wire.ReplicaFetchResponse, []*segment.View) {
	now := b.cfg.Now()
	parts := make([]replicaFetchPart, len(req.Parts))
	for i := range req.Parts {
		rp := &req.Parts[i]
		parts[i] = replicaFetchPart{p: b.partition(rp.Topic, rp.Partition), req: rp}
		pt := &parts[i]
		if pt.p != nil && pt.p.topicID() != rp.TopicID {
			// Another incarnation of the topic (deleted and re-created; one
			// of us has not applied it yet): the follower's offsets are not
			// this log's, and this log's records are not its topic's.
			pt.p = nil
		}
		if pt.p == nil {
			continue
		}
		pt.p.decide(func(r *replica.Replica) replica.Decisions {
			var d replica.Decisions
			pt.chk, d = r.FollowerFetch(pt.p.log, replica.Fetch{ReplicaID: open.FollowerID, Incarnation: open.Incarnation,
				FetchOffset: rp.FetchOffset, LastFetchedEpoch: rp.LastFetchedEpoch,
				CurrentLeaderEpoch: rp.CurrentLeaderEpoch}, now)
			if rp.LogStart != nil && pt.chk.Code == replica.OK {
				pt.p.noteFollowerStartLocked(open.FollowerID, *rp.LogStart) // decide holds mu
			}
			return d
		})
		pt.p.register(w)
	}
	defer func() {
		for _, pt := range parts {
			if pt.p != nil {
				pt.p.unregister(w)
			}
		}
	}()
	deadline := time.NewTimer(time.Duration(max(req.MaxWaitMs, 0)) * time.Millisecond)
	defer deadline.Stop()
	var hwDue <-chan time.Time    // armed when an HW the follower lacks is all there is to send
	var startDue <-chan time.Time // armed while a DeleteRecords waits for this follower's log start
	for {
		// Drain a stale wake-up: everything below reads the current state.
		select {
		case <-w.ch:
		default:
		}
		resp, views, ready, hwNews := b.buildReplicaFetch(parts, req.MaxBytes)
		if ready || req.MaxWaitMs <= 0 || (hwNews && b.cfg.ReplicaHWDelay < 0) {
			return resp, views
		}
		releaseAll(views)
		if hwNews && hwDue == nil {
			t := time.NewTimer(b.cfg.ReplicaHWDelay)
			defer t.Stop()
			hwDue = t.C
		}
		if startDue == nil && slices.ContainsFunc(parts, func(pt replicaFetchPart) bool {
			return pt.p != nil && pt.p.followerStartAwaited(open.FollowerID)
		}) {
			t := time.NewTimer(startNudge)
			defer t.Stop()
			startDue = t.C
		}
		select {
		case <-w.ch:
		case <-hwDue:
			resp, views, _, _ := b.buildReplicaFetch(parts, req.MaxBytes)
			return resp, views
		case <-startDue:
			resp, views, _, _ := b.buildReplicaFetch(parts, req.MaxBytes)
			return resp, views
		case <-deadline.C:
			resp, views, _, _ := b.buildReplicaFetch(parts, req.MaxBytes)
			return resp, views
		case <-ctx.Done():
			return wire.ReplicaFetchResponse{}, nil
		}
	}
}

// buildReplicaFetch reads what each partition has for the follower. ready
// says the response is worth sending before the long-poll expires (records,
// an error, a divergence); hwNews that it would tell the follower of an HW
// it has not seen.
func (b *Broker) buildReplicaFetch(parts []replicaFetchPart, maxBytes int32) (resp wire.ReplicaFetchResponse, views []*segment.View, ready, hwNews bool) {
	budget := int(maxBytes)
	if budget <= 0 {
		budget = int(b.cfg.ReplicaFetchMaxBytes)
	}
	resp.Parts = make([]wire.ReplicaFetchPartitionResponse, len(parts))
	for i, pt := range parts {
		out := &resp.Parts[i]
		*out = wire.ReplicaFetchPartitionResponse{Topic: pt.req.Topic, Partition: pt.req.Partition,
			DivergingEpoch: -1, DivergingEndOffset: -1, HighWatermark: -1, LogStart: -1, LogEnd: -1}
		if pt.p == nil {
			out.Err, ready = wire.UnknownTopicOrPartition, true
			continue
		}
		p := pt.p
		p.mu.Lock()
		stopped := p.mu.stopped
		code := p.mu.r.CheckEpoch(pt.req.CurrentLeaderEpoch)
		epoch := p.mu.r.LeaderEpoch()
		out.HighWatermark, out.LogStart, out.LogEnd = p.mu.r.HW(), p.mu.r.LogStart(), p.mu.r.LEO()
		p.mu.Unlock()
		switch {
		case stopped:
			out.Err, ready = wire.NotLeader, true
			continue
		case pt.chk.Code != replica.OK:
			out.Err, ready = codeToWire(pt.chk.Code), true
			continue
		case code != replica.OK: // the leadership moved while we waited
			out.Err, ready = codeToWire(code), true
			continue
		case pt.chk.Diverged():
			if pt.chk.DivergingEpoch < 0 {
				// We know no epoch as old as the follower's: it restarts
				// at our log start (wire: OffsetOutOfRange below LogEnd).
				out.Err, out.LogStart = wire.OffsetOutOfRange, pt.chk.DivergingEndOffset
			} else {
				out.DivergingEpoch, out.DivergingEndOffset = pt.chk.DivergingEpoch, pt.chk.DivergingEndOffset
			}
			ready = true
			continue
		}
		if out.HighWatermark != pt.req.HighWatermark {
			hwNews = true
		}
		if pt.req.FetchOffset < out.LogEnd && budget > 0 {
			if h := b.hooks.beforeReplicaRead.Load(); h != nil {
				(*h)(pt.req)
			}
			v, err := p.log.Read(pt.req.FetchOffset, budget, -1)
			if err != nil {
				out.Err, ready = readErrCode(err), true
				if out.Err == wire.OffsetOutOfRange {
					// Retention moved the log start since the check: the
					// follower restarts at the new one, not the old.
					out.LogStart = max(out.LogStart, p.log.LogStartOffset())
				}
				continue
			}
			// The checks above and the read are not atomic: if this
			// replica lost the leadership in between, its fetcher may
			// have truncated the log and copied another leader's records
			// to the offsets read. Sent to a follower of the old epoch,
			// they would land behind its own (maybe divergent) tail, and
			// no later epoch check could see the difference. A log is
			// truncated only after its replica stopped leading, so
			// records read while it has led without a break since the
			// check are the ones checked.
			if c := p.checkLeadership(epoch); c != replica.OK {
				v.Release()
				out.Err, out.Records, ready = codeToWire(c), nil, true
				continue
			}
			views = append(views, v)
			if len(v.Data) > 0 {
				// A follower's log may end inside a run of empty batches
				// this log's cleaner merged into one: it gets the rest
				// of the run (a copy, in that rare case).
				out.Records = segment.TrimEmptyBatch(v.Data, pt.req.FetchOffset)
				budget -= len(v.Data)
				ready = true
			}
		}
	}
	return resp, views, ready, hwNews
}
