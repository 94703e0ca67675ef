package broker

import (
	"context"
	"fmt"

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
	for i, dp := range req.Parts {
		out := &resp.Parts[i]
		*out = wire.DeleteRecordsPartitionResponse{Partition: dp.Partition, LowWatermark: -1, LeaderHint: -1}
		if denied != nil {
			out.Err, out.Message = denied.Code, denied.Message
			continue
		}
		p := b.partition(req.Topic, dp.Partition)
		if p == nil {
			out.Err = wire.UnknownTopicOrPartition
			continue
		}
		low, leader, err := p.deleteRecords(ctx, dp.Offset)
		out.LeaderHint = leader
		if err != nil {
			out.Err, out.Message = err.Code, err.Message
			continue
		}
		out.LowWatermark = low
	}
	return wire.TypeDeleteRecords, resp, nil
}

// deleteRecords moves the log start offset of the partition, which must
// lead, up to off (wire.DeleteRecordsLatest: its HW), and returns the log
// start offset after it and the leader it knows.
func (p *partition) deleteRecords(ctx context.Context, off int64) (int64, int32, *wire.Error) {
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
	fail := func(c wire.ErrorCode, format string, args ...any) (int64, int32, *wire.Error) {
		p.appendMu.Unlock()
		return -1, leader, &wire.Error{Code: c, Message: fmt.Sprintf(format, args...)}
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
		return start, leader, nil
	}
	snap, err := p.snapshotBeforeDeletingLocked()
	p.appendMu.Unlock()
	if err != nil {
		return -1, leader, &wire.Error{Code: wire.KafkaStorageError, Message: err.Error()}
	}
	if err := p.deleteBefore(ctx, off, snap); err != nil {
		return -1, leader, &wire.Error{Code: readErrCode(err), Message: err.Error()}
	}
	p.lg.Info("deleted records on request", "offset", off, "was", start)
	return p.log.LogStartOffset(), leader, nil
}
