package broker

import (
	"context"
	"sync"

	"paymentlog/wire"
)

// flusher makes a pipelined follower's appends durable beside its fetch
// loop, and tells the leader what became durable.
//
// A follower that flushes each answer before it fetches again leaves the
// leader's HW waiting for a whole round: the flush, then the next fetch's
// trip. A pipelined one appends an answer, hands it to its flusher and
// fetches at once, its fetch offset ahead of its durable end (which the
// request carries separately: only that counts on the leader). When a flush
// round ends, the flusher records the new durable ends and leader HWs in
// the replicas and sends the leader a ReplicaDurableReport on the fetch
// session, which the leader applies while the next fetch waits.
//
// The fetch loop runs at most one answer ahead of the flushes: before each
// fetch it waits until the flusher has taken every answer but the last
// into a flush round. A follower whose disk stops therefore stops fetching
// two answers later, and the leader shrinks it out of the ISR after the lag
// time, as it would a serial follower.
type flusher struct {
	f    *fetcher
	wake chan struct{}
	mu   struct {
		sync.Mutex
		queued []fetchedPart
		handed uint64        // answers handed in
		taken  uint64        // answers taken into a flush round
		moved  chan struct{} // closed (and replaced) when taken moves
	}
}

func newFlusher(f *fetcher) *flusher {
	fl := &flusher{f: f, wake: make(chan struct{}, 1)}
	fl.mu.moved = make(chan struct{})
	return fl
}

// hand queues one answer's partitions (possibly none) and returns its
// number.
func (fl *flusher) hand(parts []fetchedPart) uint64 {
	fl.mu.Lock()
	fl.mu.queued = append(fl.mu.queued, parts...)
	fl.mu.handed++
	n := fl.mu.handed
	fl.mu.Unlock()
	select {
	case fl.wake <- struct{}{}:
	default:
	}
	return n
}

// waitTaken returns once answer n is taken into a flush round, or ctx ends.
func (fl *flusher) waitTaken(ctx context.Context, n uint64) error {
	for {
		fl.mu.Lock()
		taken, moved := fl.mu.taken, fl.mu.moved
		fl.mu.Unlock()
		if taken >= n {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// run flushes what is queued, round after round, until ctx ends.
func (fl *flusher) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-fl.wake:
		}
		fl.mu.Lock()
		parts := fl.mu.queued
		fl.mu.queued = nil
		fl.mu.taken = fl.mu.handed
		close(fl.mu.moved)
		fl.mu.moved = make(chan struct{})
		fl.mu.Unlock()
		fl.round(ctx, latestPerPartition(parts))
	}
}

// round flushes parts (one per partition), records them in the replicas and
// reports the durable ends that moved to the leader.
func (fl *flusher) round(ctx context.Context, parts []fetchedPart) {
	if len(parts) == 0 {
		return
	}
	f := fl.f
	// Every part, also one whose answer brought no records: its fetch
	// offset may include records this follower appended under an earlier
	// leader or epoch and not yet flushed.
	f.syncAll(parts, true)
	var rep wire.ReplicaDurableReport
	for _, fp := range parts {
		if fp.t.p.log.Failed() != nil { // a failed flush: not this replica's records
			continue
		}
		// Reported when the leader has not seen it with the fetch.
		if durable, ok := f.finishPartition(fp); ok && durable > fp.t.durable {
			rep.Parts = append(rep.Parts, wire.ReplicaDurablePartition{Topic: fp.t.p.key.topic, TopicID: fp.t.topicID,
				Partition: fp.t.p.key.partition, CurrentLeaderEpoch: fp.t.epoch, Durable: durable})
		}
		// The leader's retention moved its log start: follow it (retention.go).
		if p := fp.t.p; fp.leaderStart > p.log.LogStartOffset() && p.log.Failed() == nil {
			f.raiseLogStart(fp)
		}
	}
	if len(rep.Parts) == 0 {
		return
	}
	// The session the answers came on, or its successor: a report to a
	// session that has closed is lost, and the next fetch carries the
	// durable ends anyway.
	if s := f.sess.Load(); s != nil {
		if err := s.Send(ctx, wire.TypeReplicaDurable, rep); err != nil && ctx.Err() == nil {
			f.b.log.Debug("durable report not sent", "leader", f.leader, "err", err)
		}
	}
}

// latestPerPartition keeps, of several answers' parts, the last one of each
// partition (the latest leader HW and log start, and the highest fetch
// offset), marked appended when any of them appended.
func latestPerPartition(parts []fetchedPart) []fetchedPart {
	if len(parts) <= 1 {
		return parts
	}
	at := make(map[tp]int, len(parts))
	out := parts[:0:0]
	for _, fp := range parts {
		i, ok := at[fp.t.p.key]
		if !ok {
			at[fp.t.p.key] = len(out)
			out = append(out, fp)
			continue
		}
		appended := out[i].appended || fp.appended
		out[i] = fp
		out[i].appended = appended
	}
	return out
}
