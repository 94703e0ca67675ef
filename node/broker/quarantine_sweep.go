package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/node/replica"
	"paymentlog/segment"
)

// The quarantine sweep removes a replica's scrub quarantines (segment's
// quarantine.go: what a repair took out of its log, set aside) once they
// are provably redundant, so that they do not fill the disk unless the
// operator removes them. It runs after each retention pass
// (Config.RetentionCheckInterval) and removes a quarantine only when all of
// these hold (quarantineVerdict):
//
//  1. automatic removal is on: the retention (Config.QuarantineRetention,
//     SetQuarantineRetention) is above 0;
//  2. it was set aside at least that long ago (segment.Quarantine.SetAsideAt);
//  3. the offsets it holds are known (segment.QuarantineRange: its
//     oldest segment file's base to the last whole valid batch of its
//     newest one, with that batch's leader epoch);
//  4. the partition has more than one replica: with replication factor 1
//     the quarantine may be the only copy of what the repair took out;
//  5. the replica is in the partition's ISR with at least one other member
//     (a follower in the ISR, or a leader whose ISR holds another): what it
//     holds up to its HW is on another replica too;
//  6. the replica has those offsets back: its HW is past the quarantine's
//     last offset and its log's leader epoch at that offset is the epoch
//     of the quarantine's batch there: one leader writes an offset once in
//     its epoch, and a log changes only by truncating its end and
//     appending, so the same (offset, epoch) means the same records up to
//     it (Kafka's log matching, KIP-101). A different epoch means the
//     records it holds there were lost (an unclean election, acks=1
//     records never replicated): it stays. Or its log start is past the
//     last offset: retention (or a DeleteRecords) has since removed those
//     offsets from the partition.
//
// Each removal is logged (partition, directory, offsets, bytes) and
// counted (Stats.ScrubQuarantineRemoved). A quarantine past its retention
// that stays is logged once per reason, so the operator learns why. The
// node's audit trail has no event for it (its node lines are the start,
// the stop and TLS reloads).

// DefaultQuarantineRetention is the node's default retention of scrub
// quarantines (node's --log-scrub-quarantine-retention): a week.
const DefaultQuarantineRetention = 168 * time.Hour

// quarantineSweep is the broker's sweep state.
type quarantineSweep struct {
	// retention is the retention in nanoseconds (0: never remove).
	retention atomic.Int64
	// removed counts the quarantines removed.
	removed atomic.Uint64

	mu struct {
		sync.Mutex // serialises sweeps
		// seen remembers, per partition replica and quarantine, its
		// range (read once: it does not change) and the last reason it
		// stayed, logged.
		seen map[*partition]map[string]*quarantineMemo
	}
}

// quarantineMemo is what the sweep remembers of a quarantine.
type quarantineMemo struct {
	rng    segment.QuarantineRange
	logged string // the reason it stayed last logged ("": none)
}

// SetQuarantineRetention sets how long a scrub quarantine is kept before
// the sweep may remove it (0 or less: never automatically).
func (b *Broker) SetQuarantineRetention(d time.Duration) {
	d = max(d, 0)
	if old := time.Duration(b.quarantine.retention.Swap(int64(d))); old != d {
		b.log.Info("scrub quarantine retention changed", "retention", d, "was", old)
	}
}

// QuarantineRetention is the retention SetQuarantineRetention last set (0:
// never automatically); the node's sweep of the metadata log's quarantines
// keeps them as long.
func (b *Broker) QuarantineRetention() time.Duration {
	return time.Duration(b.quarantine.retention.Load())
}

// quarantineFacts is what decides a quarantine's removal.
type quarantineFacts struct {
	retention time.Duration // 0: never remove
	age       time.Duration // since it was set aside
	rng       segment.QuarantineRange
	replicas  int   // the partition's replication factor
	inISR     bool  // the replica is in the ISR
	isr       int   // the ISR's size
	hw        int64 // the replica's HW
	logStart  int64
	epochAt   int32 // the replica log's leader epoch at rng.LastOffset (-1: none)
}

// quarantineVerdict says whether a quarantine goes (the file's top
// comment), and why not when it stays ("" when it goes).
func quarantineVerdict(f quarantineFacts) (remove bool, why string) {
	switch {
	case f.retention <= 0:
		return false, "automatic removal is off (retention 0)"
	case !pastRetention(f.retention, f.age):
		return false, fmt.Sprintf("set aside %s ago, retention %s", f.age.Round(time.Second), f.retention)
	case f.rng.Unknown != "":
		return false, "the offsets it holds cannot be told: " + f.rng.Unknown
	case f.replicas < 2:
		return false, "the partition has a single replica: this may be the only copy"
	case !f.inISR || f.isr < 2:
		return false, fmt.Sprintf("the replica is not in sync with another (in the ISR: %v, ISR size %d)", f.inISR, f.isr)
	case f.logStart > f.rng.LastOffset:
		// Retention has removed those offsets (or it holds no whole
		// batch: LastOffset -1).
		return true, ""
	case f.hw <= f.rng.LastOffset:
		return false, fmt.Sprintf("not fetched again yet: HW %d, the quarantine holds up to offset %d", f.hw, f.rng.LastOffset)
	case f.epochAt != f.rng.LastEpoch:
		return false, fmt.Sprintf("offset %d is of epoch %d in the log, %d in the quarantine: it may hold records no replica has",
			f.rng.LastOffset, f.epochAt, f.rng.LastEpoch)
	}
	return true, ""
}

// pastRetention reports whether a quarantine set aside age ago is past the
// retention (rules 1 and 2): the sweep reads what it holds only then.
func pastRetention(retention, age time.Duration) bool { return retention > 0 && age >= retention }

// SweepQuarantines runs the sweep over every partition now and returns
// how many quarantines it removed. A partition whose quarantines cannot be
// listed or removed is logged and skipped; the next sweep tries again.
func (b *Broker) SweepQuarantines(ctx context.Context, now time.Time) (removed int) {
	q := &b.quarantine
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.mu.seen == nil {
		q.mu.seen = map[*partition]map[string]*quarantineMemo{}
	}
	parts := b.partitions()
	for p := range q.mu.seen {
		if !slices.Contains(parts, p) {
			delete(q.mu.seen, p)
		}
	}
	retention := time.Duration(q.retention.Load())
	for _, p := range parts {
		if ctx.Err() != nil {
			return removed
		}
		n, err := b.sweepPartition(p, now, retention)
		removed += n
		if err != nil && !errors.Is(err, segment.ErrClosed) {
			p.lg.Warn("sweeping scrub quarantines", "err", err)
		}
	}
	return removed
}

// sweepPartition removes p's redundant quarantines. q.mu held.
func (b *Broker) sweepPartition(p *partition, now time.Time, retention time.Duration) (int, error) {
	if retention <= 0 {
		return 0, nil
	}
	qs, err := p.log.Quarantines(now)
	if err != nil || len(qs) == 0 {
		return 0, err
	}
	seen := b.quarantine.mu.seen[p]
	if seen == nil {
		seen = map[string]*quarantineMemo{}
		b.quarantine.mu.seen[p] = seen
	}
	removed := 0
	for _, qt := range qs {
		age := now.Sub(qt.SetAsideAt)
		if !pastRetention(retention, age) {
			continue // no need to read it yet
		}
		m := seen[qt.Name]
		if m == nil {
			rng, err := p.log.QuarantineRange(qt.Name)
			if err != nil {
				return removed, err
			}
			m = &quarantineMemo{rng: rng}
			seen[qt.Name] = m
		}
		f := p.quarantineFacts(m.rng)
		f.retention, f.age = retention, age
		ok, why := quarantineVerdict(f)
		if !ok {
			if why != m.logged {
				m.logged = why
				p.lg.Info("keeping a scrub quarantine past its retention", "dir", filepath.Join(p.dir, qt.Name), "reason", why,
					"first_offset", m.rng.FirstOffset, "last_offset", m.rng.LastOffset, "bytes", qt.Bytes)
			}
			continue
		}
		if err := p.log.RemoveQuarantine(qt.Name); err != nil {
			return removed, err
		}
		delete(seen, qt.Name)
		removed++
		b.quarantine.removed.Add(1)
		p.quarantined.Store(p.log.QuarantinedBytes())
		p.lg.Info("removed a scrub quarantine: the replica holds its offsets again, in sync with another",
			"dir", filepath.Join(p.dir, qt.Name), "first_offset", m.rng.FirstOffset, "last_offset", m.rng.LastOffset,
			"epoch", m.rng.LastEpoch, "bytes", qt.Bytes, "set_aside", qt.SetAsideAt, "hw", f.hw, "log_start", f.logStart)
	}
	return removed, nil
}

// quarantineFacts gathers the replica's side of a quarantine's verdict.
func (p *partition) quarantineFacts(rng segment.QuarantineRange) quarantineFacts {
	f := quarantineFacts{rng: rng, epochAt: -1}
	p.mu.Lock()
	r := p.mu.r
	if !p.mu.stopped && (r.Role() == replica.RoleLeader || r.Role() == replica.RoleFollower) {
		isr := r.ISR()
		f.replicas, f.isr, f.inISR = len(r.Replicas()), len(isr), slices.Contains(isr, r.ID())
		f.hw, f.logStart = r.HW(), r.LogStart()
	}
	p.mu.Unlock()
	if rng.LastOffset >= 0 {
		for _, e := range p.log.Epochs() {
			if e.StartOffset > rng.LastOffset {
				break
			}
			f.epochAt = e.Epoch
		}
	}
	return f
}
