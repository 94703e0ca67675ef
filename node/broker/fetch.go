package broker

import (
	"context"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// handleFetch serves consumers: whole batches strictly below the HW, from the
// segment mapping. It long-polls until MinBytes are available, an error
// occurs, or MaxWaitMs passes.
//
// While a new leader's HW is below the start offset of its epoch (KIP-207:
// it may be below the HW its predecessor made visible) an answer still
// carries the records below the HW but reports the HW as -1 (unknown), so
// that no consumer takes it for the end of the log.
//
// A partition whose LastFetchedEpoch the leader's log does not agree with
// (consumerDivergence) is answered at once with the divergence and no
// records, as a follower's fetch is (KIP-320): the consumer's position
// follows records this log no longer has, and the records now at its
// position belong to another history. A LastFetchedEpoch newer than the
// leader's own epoch means the consumer has seen a later leader than this
// replica knows of: UnknownLeaderEpoch (retriable, refresh the metadata).
func (b *Broker) handleFetch(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
	var req wire.FetchRequest
	if err := fr.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := b.authorize(peer, wire.OpRead, req.Topic); e != nil {
		resp := wire.FetchResponse{Parts: make([]wire.FetchPartitionResponse, len(req.Parts))}
		for i, fp := range req.Parts {
			resp.Parts[i] = wire.FetchPartitionResponse{Partition: fp.Partition, Err: e.Code, Message: e.Message,
				HighWatermark: -1, LogStart: -1, LogEnd: -1, LeaderHint: -1}
		}
		return wire.TypeFetch, &resp, nil
	}
	held := b.holdBack(ctx, peer, wire.QuotaConsumerByteRate)
	parts := make([]*partition, len(req.Parts))
	w := newWaiter()
	for i, fp := range req.Parts {
		if parts[i] = b.clientPartition(req.Topic, fp.Partition); parts[i] != nil {
			parts[i].register(w)
		}
	}
	defer func() {
		for _, p := range parts {
			if p != nil {
				p.unregister(w)
			}
		}
	}()
	deadline := time.NewTimer(time.Duration(max(req.MaxWaitMs, 0)) * time.Millisecond)
	defer deadline.Stop()
	for {
		select {
		case <-w.ch:
		default:
		}
		resp, views, bytes, failed := b.buildFetch(&req, parts)
		if failed || bytes >= int(max(req.MinBytes, 1)) || req.MaxWaitMs <= 0 {
			return b.sendFetch(peer, held, resp, views)
		}
		releaseAll(views)
		select {
		case <-w.ch:
		case <-deadline.C:
			resp, views, _, _ := b.buildFetch(&req, parts)
			return b.sendFetch(peer, held, resp, views)
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	}
}

// sendFetch answers peer's fetch with records aliasing the segment mapping:
// quic writes them to the stream straight from the mapping, then the views
// are released. The bytes count against peer's quota, and the answer tells
// the client how long to wait before it fetches again (held: how long the
// fetch was held back for its quota).
func (b *Broker) sendFetch(peer quic.Peer, held time.Duration, resp wire.FetchResponse, views []*segment.View) (quic.FrameType, any, error) {
	told := b.recordQuota(peer, wire.QuotaConsumerByteRate, fetchedBytes(&resp))
	resp.ThrottleMs = int32(told / time.Millisecond)
	b.countThrottle(throttledFetch, held+told)
	b.counters.fetched(&resp)
	return wire.TypeFetch, quic.Reply{Body: &resp, Done: func() { releaseAll(views) }}, nil
}

func (b *Broker) buildFetch(req *wire.FetchRequest, parts []*partition) (resp wire.FetchResponse, views []*segment.View, bytes int, failed bool) {
	budget := int(req.MaxBytes)
	if budget <= 0 {
		budget = 1 << 20
	}
	resp.Parts = make([]wire.FetchPartitionResponse, len(req.Parts))
	for i, fp := range req.Parts {
		out := &resp.Parts[i]
		*out = wire.FetchPartitionResponse{Partition: fp.Partition, HighWatermark: -1, LogStart: -1, LogEnd: -1, LeaderHint: -1}
		p := parts[i]
		if p == nil {
			out.Err, failed = wire.UnknownTopicOrPartition, true
			continue
		}
		truncations := p.truncations.Load() // before the checks: follower_reads.go
		p.mu.Lock()
		r := p.mu.r
		code := r.CheckEpochAhead(fp.LeaderEpoch)
		if p.mu.stopped {
			code = replica.NotLeader
		}
		hw, start, leo := r.HW(), r.LogStart(), r.LEO()
		hwUnknown := r.HWBelowEpochStart()
		epoch := r.LeaderEpoch()
		out.LeaderHint, out.LeaderEpoch = r.Leader(), epoch
		var onFollower bool
		if req.Rack != "" && !p.mu.stopped {
			var pref int32
			code, pref, onFollower = b.rackRead(r, code, fp.LeaderEpoch, req.Rack)
			out.PreferredReplica = pref
		}
		p.mu.Unlock()
		if out.PreferredReplica != 0 {
			failed = true // answered at once: the consumer goes to that follower
			continue
		}
		out.HighWatermark, out.LogStart, out.LogEnd = hw, start, leo
		if hwUnknown {
			out.HighWatermark = -1
		}
		if code == replica.OK && fp.LastFetchedEpoch > epoch {
			code = replica.UnknownLeaderEpoch
		}
		if code != replica.OK {
			out.Err, failed = codeToWire(code), true
			continue
		}
		if div, ok := consumerDivergence(p.log, start, fp.LastFetchedEpoch, fp.Offset); ok {
			if onFollower { // the leader tells the consumer where its history parts
				out.Err, failed = wire.NotLeader, true
				continue
			}
			// Answered only while this replica still leads: a log whose
			// replica lost the leadership since the check may be being
			// truncated, and its epoch cache with it.
			if c := p.checkLeadership(epoch); c != replica.OK {
				out.Err, failed = codeToWire(c), true
				continue
			}
			out.Diverging, failed = &div, true
			continue
		}
		if fp.Offset < start || fp.Offset > leo {
			out.Err, failed = wire.OffsetOutOfRange, true
			continue
		}
		if fp.Offset >= hw || budget <= 0 {
			continue
		}
		limit := budget
		if fp.MaxBytes > 0 {
			limit = min(limit, int(fp.MaxBytes))
		}
		if h := b.hooks.beforeConsumerRead.Load(); h != nil {
			(*h)(&fp)
		}
		v, err := p.log.Read(fp.Offset, limit, hw)
		if err != nil {
			out.Err, failed = readErrCode(err), true
			if out.Err == wire.OffsetOutOfRange {
				out.LogStart = max(out.LogStart, p.log.LogStartOffset()) // retention ran since the check
			}
			continue
		}
		// The checks above and the read are not atomic. A log is
		// truncated only after its replica stopped leading (becoming a
		// follower of a leader whose log diverges from it); if that
		// happened in between, the bytes read at offsets below the HW
		// checked may be another leader's records, written after a
		// truncation below the consumer's position: served as they are
		// they would continue the consumer's history with another one
		// (and the divergence and HW checks were made on the log before
		// it changed). Records read while this replica has led without a
		// break since the check are the ones checked.
		var c replica.Code
		if onFollower {
			c = p.checkFollowing(epoch, truncations)
		} else {
			c = p.checkLeadership(epoch)
		}
		if c != replica.OK {
			v.Release()
			out.Err, failed = codeToWire(c), true
			continue
		}
		views = append(views, v)
		out.Records = v.Data
		bytes += len(v.Data)
		budget -= len(v.Data)
	}
	return resp, views, bytes, failed
}

// consumerDivergence checks a consumer's fetch at offset, whose record just
// before offset was in a batch of leader epoch lastEpoch (-1: unknown, no
// check), against the leader's epoch cache (KIP-320, as FollowerFetch does
// for a follower). It reports a divergence when the leader's log left that
// epoch before offset, when the largest epoch <= lastEpoch the log knows is
// older than lastEpoch (the batches the consumer read in lastEpoch are not
// in this log), or when the log knows no epoch that old while it holds
// records below offset (they all belong to later epochs than the
// consumer's). logStart is the log's start offset. The caller has checked
// that lastEpoch is not newer than its own leader epoch.
func consumerDivergence(log replica.EpochSource, logStart int64, lastEpoch int32, offset int64) (wire.EpochEndOffset, bool) {
	if lastEpoch < 0 {
		return wire.EpochEndOffset{}, false
	}
	e, end := log.EndOffsetForEpoch(lastEpoch)
	switch {
	case e < 0 || end < 0:
		// No epoch as old in the cache: the log is empty (and offset
		// out of range unless it is the log start), or retention removed
		// the consumer's epoch (then offset is at or below the log start),
		// or every batch here was written after the consumer's history.
		if offset > logStart {
			return wire.EpochEndOffset{Epoch: -1, EndOffset: logStart}, true
		}
	case e < lastEpoch || end < offset:
		return wire.EpochEndOffset{Epoch: e, EndOffset: end}, true
	}
	return wire.EpochEndOffset{}, false
}

// handleListOffsets answers the earliest offset, the latest (the HW), or the
// first offset at or after a timestamp (-1 if none below the HW).
//
// While a new leader's HW is below the start offset of its epoch it may be
// below the HW its predecessor made visible (KIP-207): the latest offset,
// and a timestamp whose first offset is not below the HW, are answered with
// the retriable OffsetNotAvailable instead of an end offset that would hide
// acknowledged, already visible records.
func (b *Broker) handleListOffsets(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
	var req wire.ListOffsetsRequest
	if err := fr.Decode(&req); err != nil {
		return 0, nil, err
	}
	resp := wire.ListOffsetsResponse{Parts: make([]wire.ListOffsetsPartitionResponse, len(req.Parts))}
	if e := b.authorize(peer, wire.OpDescribe, req.Topic); e != nil {
		for i, lp := range req.Parts {
			resp.Parts[i] = wire.ListOffsetsPartitionResponse{Partition: lp.Partition, Err: e.Code, Offset: -1, LeaderHint: -1}
		}
		return wire.TypeListOffsets, resp, nil
	}
	for i, lp := range req.Parts {
		out := &resp.Parts[i]
		*out = wire.ListOffsetsPartitionResponse{Partition: lp.Partition, Offset: -1, LeaderHint: -1}
		p := b.clientPartition(req.Topic, lp.Partition)
		if p == nil {
			out.Err = wire.UnknownTopicOrPartition
			continue
		}
		p.mu.Lock()
		code := p.mu.r.CheckEpoch(-1)
		if p.mu.stopped {
			code = replica.NotLeader
		}
		hw, start := p.mu.r.HW(), p.mu.r.LogStart()
		hwUnknown := p.mu.r.HWBelowEpochStart()
		out.LeaderHint = p.mu.r.Leader()
		p.mu.Unlock()
		if code != replica.OK {
			out.Err = codeToWire(code)
			continue
		}
		switch lp.Timestamp {
		case wire.Earliest:
			out.Offset = start
		case wire.Latest:
			if hwUnknown {
				out.Err = wire.OffsetNotAvailable
				continue
			}
			out.Offset = hw
		default:
			off, err := p.log.OffsetForTimestamp(lp.Timestamp)
			if err != nil {
				out.Err = readErrCode(err)
				continue
			}
			switch {
			case off >= 0 && off < hw:
				out.Offset = off
			case off >= 0 && hwUnknown:
				// The first record at or after the timestamp is not below
				// our HW, but may be below the one consumers have seen.
				out.Err = wire.OffsetNotAvailable
			}
		}
	}
	return wire.TypeListOffsets, resp, nil
}

// handleDescribeReplica reports the local replica's state (for checkers,
// tests and topic describe --replicas): UnknownTopicOrPartition, as for a
// partition not here, from a replica of a deleted or re-created topic
// (clientPartition).
func (b *Broker) handleDescribeReplica(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
	var req wire.DescribeReplicaRequest
	if err := fr.Decode(&req); err != nil {
		return 0, nil, err
	}
	if e := b.authorize(peer, wire.OpDescribe, req.Topic); e != nil {
		return wire.TypeDescribeReplica, wire.DescribeReplicaResponse{Err: e.Code}, nil
	}
	p := b.clientPartition(req.Topic, req.Partition)
	if p == nil {
		return wire.TypeDescribeReplica, wire.DescribeReplicaResponse{Err: wire.UnknownTopicOrPartition}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.mu.r
	return wire.TypeDescribeReplica, wire.DescribeReplicaResponse{LogStart: r.LogStart(), LogEnd: r.LEO(),
		HighWatermark: r.HW(), LeaderEpoch: r.LeaderEpoch(), IsLeader: r.Role() == replica.RoleLeader,
		Size: p.log.Size(), Segments: len(p.log.Segments())}, nil
}
