package broker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/wire"
)

// handleDeleteRecords answers a DeleteRecordsRequest (Kafka's
// DeleteRecords) for the partitions this node leads: each one's log start
// offset moves up to the offset asked (the HW for wire.DeleteRecordsLatest)
// and the whole segments below it are deleted, as retention deletes them
// (the producer state written first). Followers move theirs at their next
// fetch (raiseLogStart). Refused: a principal without delete on the topic,
// an offset above the HW (OffsetOutOfRange: only committed records may
// go), and a topic that compacts without deleting (PolicyViolation: its
// cleaner, not an offset, decides what it keeps; Kafka refuses it too).
func (b *Broker) handleDeleteRecords(ctx context.Context, peer quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
	var req wire.DeleteRecordsRequest
	if err := fr.Decode(&req); err != nil {
		return 0, nil, err
	}
	if len(req.Parts) > wire.MaxDeleteRecordsParts {
		return 0, nil, fmt.Errorf("broker: delete records for %d partitions, at most %d", len(req.Parts), wire.MaxDeleteRecordsParts)
	}
	resp := wire.DeleteRecordsResponse{Parts: make([]wire.DeleteRecordsPartitionResponse, len(req.Parts))}
	denied := b.authorize(peer, wire.OpDelete, req.Topic)
	wanted := make([]int64, len(req.Parts)) // each partition's offset, once deleted on the leader
	for i, dp := range req.Parts {
		out := &resp.Parts[i]
		*out = wire.DeleteRecordsPartitionResponse{Partition: dp.Partition, LowWatermark: -1, LeaderHint: -1}
		if denied != nil {
			out.Err, out.Message = denied.Code, denied.Message
			continue
		}
		p := b.clientPartition(req.Topic, dp.Partition)
		if p == nil {
			out.Err = wire.UnknownTopicOrPartition
			continue
		}
		low, target, leader, err := p.deleteRecords(ctx, dp.Offset)
		out.LeaderHint = leader
		if err != nil {
			out.Err, out.Message = err.Code, err.Message
			continue
		}
		out.LowWatermark = low
		wanted[i] = target
	}
	if req.TimeoutMs > 0 {
		// Every partition's deletion is under way; now wait for the
		// followers, all partitions within the one timeout.
		wctx, cancel := context.WithTimeout(ctx, time.Duration(req.TimeoutMs)*time.Millisecond)
		defer cancel()
		for i, dp := range req.Parts {
			out := &resp.Parts[i]
			if out.Err != wire.None {
				continue
			}
			p := b.clientPartition(req.Topic, dp.Partition)
			if p == nil { // removed meanwhile (the topic deleted, the replica moved away)
				out.LowWatermark, out.Err = -1, wire.UnknownTopicOrPartition
				continue
			}
			out.LowWatermark, out.Err, out.Message = p.awaitLowWatermark(wctx, wanted[i])
			if out.Err == wire.None || out.Err == wire.Timeout {
				continue
			}
			out.LowWatermark = -1
		}
	}
	return wire.TypeDeleteRecords, resp, nil
}

// awaitLowWatermark waits until every in-sync replica of the partition,
// which must lead, reports a log start offset at or above off (Kafka's
// low watermark: the replicas' lowest), and returns that lowest; or, when
// ctx ends first, the lowest reached with Timeout and a message naming
// the replicas behind. A follower that has not reported its log start in
// this leadership (an older build does not) counts as behind.
func (p *partition) awaitLowWatermark(ctx context.Context, off int64) (int64, wire.ErrorCode, string) {
	waiting := false
	defer func() {
		if waiting {
			p.mu.Lock()
			p.stopStartWaitLocked(off)
			p.mu.Unlock()
		}
	}()
	for {
		p.mu.Lock()
		if p.mu.stopped || p.mu.r.Role() != replica.RoleLeader {
			p.mu.Unlock()
			return -1, wire.NotLeader, "leadership moved while waiting for the followers to delete the records"
		}
		low := p.log.LogStartOffset()
		var behind []string
		for _, id := range p.mu.r.ISR() {
			if id == p.b.cfg.NodeID {
				continue
			}
			start, ok := p.mu.followerStarts[id]
			switch {
			case !ok:
				low = min(low, 0)
				behind = append(behind, fmt.Sprintf("%d (not reported)", id))
			case start < off:
				low = min(low, start)
				behind = append(behind, fmt.Sprintf("%d (log start %d)", id, start))
			default:
				low = min(low, start)
			}
		}
		if p.mu.startsChanged == nil {
			p.mu.startsChanged = make(chan struct{})
		}
		changed := p.mu.startsChanged
		if len(behind) > 0 && !waiting {
			waiting = true
			p.startStartWaitLocked(off)
		}
		p.mu.Unlock()
		if len(behind) == 0 {
			return low, wire.None, ""
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return low, wire.Timeout, fmt.Sprintf("records of %s below %d deleted on the leader; in-sync replica(s) %s have not deleted them yet",
				p.key, off, strings.Join(behind, ", "))
		}
	}
}

// startNudge is how soon a follower's fetch is answered, instead of at the
// end of its long poll, while a DeleteRecords waits for that follower's log
// start: the answer carries the leader's log start, the follower raises its
// own, and its next fetch reports it. Not at once: a follower that cannot
// raise its start yet (its HW behind) would otherwise fetch in a busy loop.
const startNudge = 5 * time.Millisecond

// startStartWaitLocked notes a DeleteRecords waiting for the followers'
// log starts to reach off, and wakes the follower sessions parked on the
// partition so that they answer within startNudge. mu held.
func (p *partition) startStartWaitLocked(off int64) {
	if p.mu.startWaits == nil {
		p.mu.startWaits = map[int64]int{}
	}
	p.mu.startWaits[off]++
	p.startWaiting.Add(1)
	for w := range p.mu.waiters {
		w.wake()
	}
}

// stopStartWaitLocked ends what startStartWaitLocked began. mu held.
func (p *partition) stopStartWaitLocked(off int64) {
	if p.mu.startWaits[off]--; p.mu.startWaits[off] <= 0 {
		delete(p.mu.startWaits, off)
	}
	p.startWaiting.Add(-1)
}

// followerStartAwaited reports whether a DeleteRecords waits for follower
// id's log start, which it has not reported reaching.
func (p *partition) followerStartAwaited(id int32) bool {
	if p.startWaiting.Load() == 0 { // the follower fetch path: no lock unless one waits
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	start, ok := p.mu.followerStarts[id]
	for off := range p.mu.startWaits {
		if !ok || start < off {
			return true
		}
	}
	return false
}

// noteFollowerStartLocked records the log start offset a follower
// reported in a fetch this replica, leading, accepted. mu held.
func (p *partition) noteFollowerStartLocked(id int32, start int64) {
	if old, ok := p.mu.followerStarts[id]; ok && old == start {
		return
	}
	if p.mu.followerStarts == nil {
		p.mu.followerStarts = map[int32]int64{}
	}
	p.mu.followerStarts[id] = start
	p.startsChangedLocked()
}

// startsChangedLocked wakes every awaitLowWatermark. mu held.
func (p *partition) startsChangedLocked() {
	if p.mu.startsChanged != nil {
		close(p.mu.startsChanged)
		p.mu.startsChanged = nil
	}
}

// deleteRecords moves the log start offset of the partition, which must
// lead, up to off (wire.DeleteRecordsLatest: its HW), and returns the log
// start offset after it, the offset it resolved off to and the leader it
// knows.
func (p *partition) deleteRecords(ctx context.Context, off int64) (low, target int64, leader int32, werr *wire.Error) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	p.mu.Lock()
	code := p.mu.r.CheckEpoch(-1)
	if p.mu.stopped {
		code = replica.NotLeader
	}
	hw, start, leader, policy := p.mu.r.HW(), p.mu.r.LogStart(), p.mu.r.Leader(), p.mu.cleanup
	p.mu.Unlock()
	fail := func(c wire.ErrorCode, format string, args ...any) (int64, int64, int32, *wire.Error) {
		p.appendMu.Unlock()
		return -1, -1, leader, &wire.Error{Code: c, Message: fmt.Sprintf(format, args...)}
	}
	switch {
	case code != replica.OK:
		return fail(codeToWire(code), "")
	case policy == CleanupCompact:
		return fail(wire.PolicyViolation, "topic %s has cleanup.policy=compact: its cleaner decides what it keeps, records are not deleted by offset", p.key.topic)
	case off == wire.DeleteRecordsLatest:
		off = hw
	case off < 0 || off > hw:
		return fail(wire.OffsetOutOfRange, "delete records of %s below %d: want 0 to the high watermark %d, or -1 for it", p.key, off, hw)
	}
	if off <= start {
		p.appendMu.Unlock()
		return start, off, leader, nil
	}
	snap, err := p.snapshotBeforeDeletingLocked()
	p.appendMu.Unlock()
	if err != nil {
		return -1, -1, leader, &wire.Error{Code: wire.KafkaStorageError, Message: err.Error()}
	}
	if err := p.deleteBefore(ctx, off, snap); err != nil {
		return -1, -1, leader, &wire.Error{Code: readErrCode(err), Message: err.Error()}
	}
	p.lg.Info("deleted records on request", "offset", off, "was", start)
	return p.log.LogStartOffset(), off, leader, nil
}
