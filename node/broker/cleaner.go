package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"paymentlog/segment"
)

// The log cleaner (Kafka's cleanup.policy=compact): every
// Config.CleanerInterval each partition this broker hosts, leader or
// follower, whose topic's cleanup.policy includes compact gets a
// segment.Log.Compact pass, the dirtiest first (ranked again at each pick:
// cleaner_pick.go), by CleanerThreads workers (cleaner_threads.go), but for
// the partitions set aside as uncleanable (cleaner_uncleanable.go). The log does the work
// (it keeps the last record of each key in the sealed segments it
// rewrites, and drops tombstones after delete.retention.ms); the broker
// chooses the bound and the topic's knobs:
//
//   - Below is the replica's high watermark, read as retention reads it: a
//     record that a follower may still truncate (or a leader not yet
//     commit) must not supersede an older one of its key.
//   - MinDirtyRatio, MinLag and DeleteRetention are the topic's
//     min.cleanable.dirty.ratio, min.compaction.lag.ms and
//     delete.retention.ms (PartitionState.Compaction).
//
// Every replica compacts its own log, as in Kafka: replicas hold the same
// records up to their HW but, once cleaned, not the same bytes.
//
// No lock of the partition is held across a pass, which may take long:
// Log.Compact orders itself with appends, truncations, retention's
// deletions and Close, and a pass on a log closed meanwhile (the partition
// stopped, deleted or re-created) ends with segment.ErrClosed, which is
// skipped quietly, as is segment.ErrCompactionRunning (a pass some other
// caller runs on the log). The producer state (rebuilt from batch headers)
// and its snapshots rely on Compact keeping every batch's header: a
// compacted batch may hold no record but stays.
//
// A topic whose policy is compact alone gets no retention (retentionOf):
// its log only shrinks by compaction.

// CleanupPolicy is a topic's cleanup.policy. The zero value is delete.
type CleanupPolicy uint8

// Cleanup policies.
const (
	CleanupDelete        CleanupPolicy = iota // "delete": retention only (the default)
	CleanupCompact                            // "compact": the cleaner, no retention
	CleanupCompactDelete                      // "compact,delete": both
)

// Compacts reports whether the cleaner compacts the topic (and its leaders
// refuse records without a key).
func (c CleanupPolicy) Compacts() bool { return c == CleanupCompact || c == CleanupCompactDelete }

// Deletes reports whether retention.ms and retention.bytes apply.
func (c CleanupPolicy) Deletes() bool { return c != CleanupCompact }

func (c CleanupPolicy) String() string {
	switch c {
	case CleanupDelete:
		return "delete"
	case CleanupCompact:
		return "compact"
	case CleanupCompactDelete:
		return "compact,delete"
	}
	return "unknown"
}

// CompactionConfig is a compacted topic's cleaner knobs (segment.CompactOptions).
type CompactionConfig struct {
	MinDirtyRatio   float64       // min.cleanable.dirty.ratio
	MinLag          time.Duration // min.compaction.lag.ms
	MaxLag          time.Duration // max.compaction.lag.ms (0: none; also seals the active segment: rollAgeOf)
	DeleteRetention time.Duration // delete.retention.ms
}

// CleanerSummary is what one cleaner pass over the broker's partitions did
// (CompactNow).
type CleanerSummary struct {
	// Partitions counts the compacted partitions given a Compact call,
	// Ran those whose call did some work (segment.CompactResult.Ran) and
	// Failed those whose call failed (logged; set aside as uncleanable).
	// SetAside counts the partitions the pass skipped, set aside as
	// uncleanable (cleaner_uncleanable.go).
	Partitions, Ran, Failed, SetAside int
	// Err joins the failures' errors (nil: none).
	Err error
	// The sums of the partitions' segment.CompactResult.
	Segments, SegmentsMerged          int
	BytesBefore, BytesAfter           int64
	RecordsRemoved, TombstonesRemoved int64
}

// cleanerLoop runs CompactNow every Config.CleanerInterval.
func (b *Broker) cleanerLoop() {
	defer b.wg.Done()
	t := time.NewTicker(b.cfg.CleanerInterval)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
			b.CompactNow(b.ctx)
		}
	}
}

// CompactNow runs one cleaner pass now (Config.Now): a Compact call on each
// compacted partition but those set aside as uncleanable
// (cleaner_uncleanable.go), by the pass's thread count of workers
// (CleanerThreads, cleaner_threads.go) that never take the same partition,
// each taking the first in cleanOrder (the partitions due for cleaning
// first, overdue then dirtiest) by a ranking refreshed at each pick
// (cleaner_pick.go), and returns what the calls did. Passes never overlap:
// one the loop is running finishes first. A failed call is counted, and
// its partition set aside (logged at Error when it is, at Info when a
// later try succeeds); a partition stopped or closed meanwhile, or whose
// log another caller is compacting, is skipped. It stops early when ctx
// ends: the workers take no further partition.
func (b *Broker) CompactNow(ctx context.Context) CleanerSummary {
	b.cleanMu.Lock()
	defer b.cleanMu.Unlock()
	threads := b.startCleanerPass()
	tasks, setAside := b.cleanerTasks(b.cfg.Now())
	q := &cleanQueue{left: tasks, rank: func(t *cleanTask) { b.rankTask(t, b.cfg.Now()) }}
	work := func() {
		for ctx.Err() == nil {
			t, ok := q.take()
			if !ok {
				return
			}
			q.finished(t, b.cleanOne(ctx, t))
		}
	}
	if n := min(threads, len(tasks)); n <= 1 {
		work()
	} else {
		var wg sync.WaitGroup
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				work()
			}()
		}
		wg.Wait()
	}
	s := CleanerSummary{SetAside: setAside}
	var errs []error
	var longest time.Duration
	for _, d := range q.done {
		o := d.o
		if !o.called {
			continue
		}
		s.Partitions++
		longest = max(longest, o.took)
		if o.err != nil {
			if !o.quiet {
				s.Failed++
				errs = append(errs, fmt.Errorf("%s: %w", d.t.key, o.err))
			}
			continue
		}
		res := o.res
		if !res.Ran {
			continue
		}
		s.Ran++
		s.Segments += res.Segments
		s.SegmentsMerged += res.SegmentsMerged
		s.BytesBefore += res.BytesBefore
		s.BytesAfter += res.BytesAfter
		s.RecordsRemoved += res.RecordsRemoved
		s.TombstonesRemoved += res.TombstonesRemoved
	}
	s.Err = errors.Join(errs...)
	b.cleaner.ended(b.cfg.Now(), longest)
	return s
}

// cleanerTasks ranks the compacted partitions at now (recorded for Stats)
// and returns those a pass gives a Compact call, and how many it skips as
// set aside (uncleanable). The uncleanable set forgets the partitions no
// longer compacted here.
func (b *Broker) cleanerTasks(now time.Time) (tasks []cleanTask, setAside int) {
	live := map[*partition]bool{}
	for _, p := range b.partitions() {
		t := cleanTask{p: p, key: p.key}
		if !b.rankTask(&t, now) {
			continue
		}
		live[p] = true
		if b.cleaner.uncleanable.pass(p, t.d.DirtyBytes, t.ranked) {
			setAside++
			continue
		}
		tasks = append(tasks, t)
	}
	b.cleaner.uncleanable.prune(live)
	b.cleaner.ranked(tasks, now)
	return tasks, setAside
}

// cleanOutcome is what a worker's Compact call on a partition did.
type cleanOutcome struct {
	res    segment.CompactResult
	called bool
	// err is the call's error; quiet when it is no failure (ctx ended,
	// the log closed or being compacted by some other caller).
	err   error
	quiet bool
	took  time.Duration // on Config.Now's clock
}

// cleanOne runs a Compact call on t's partition, at Config.Now, logs what
// it did and counts it; a failure sets the partition aside, a success takes
// it out of the set.
func (b *Broker) cleanOne(ctx context.Context, t cleanTask) cleanOutcome {
	p := t.p
	start := b.cfg.Now()
	res, cc, called, err := p.compact(ctx, start)
	o := cleanOutcome{res: res, called: called, err: err, took: b.cfg.Now().Sub(start)}
	if !called {
		return o
	}
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, segment.ErrClosed) || errors.Is(err, segment.ErrCompactionRunning) {
			o.quiet = true
			return o
		}
		b.counters.cleanerFailures.Add(1)
		first, skip := b.cleaner.uncleanable.failed(p, t.d.DirtyBytes, uncleanableMaxSkip(b.cfg.CleanerInterval))
		if msg := err.Error(); first || msg != p.cleanerWarned {
			p.cleanerWarned = msg
			p.lg.Error("log cleaner set aside an uncleanable partition", "err", err, "skip_passes", skip)
		} else {
			p.lg.Debug("log cleaner pass of an uncleanable partition failed again", "err", err, "skip_passes", skip)
		}
		return o
	}
	p.cleanerWarned = ""
	if failures := b.cleaner.uncleanable.cleaned(p); failures > 0 {
		p.lg.Info("log cleaner cleaned a partition it had set aside as uncleanable", "failures", failures)
	}
	if !res.Ran {
		return o
	}
	if res.Segments == 0 {
		// It mapped the keys written since the last pass and found
		// nothing they supersede (the next pass starts after them).
		p.lg.Debug("log cleaner pass removed nothing", "keys", res.Keys, "dirty_ratio", res.DirtyRatio, "offset", res.CleanedTo)
		return o
	}
	b.counters.cleanerPasses.Add(1)
	b.counters.cleanerRemoved.Add(uint64(max(res.RecordsRemoved, 0))) // tombstones included
	b.counters.cleanerReclaimed.Add(uint64(max(res.BytesBefore-res.BytesAfter, 0)))
	b.counters.cleanerMerged.Add(uint64(max(res.SegmentsMerged, 0)))
	p.lg.Info("log cleaner compacted segments", "segments", res.Segments, "segments_merged", res.SegmentsMerged, "keys", res.Keys,
		"tombstones_due", res.TombstonesDue,
		"bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter,
		"records_removed", res.RecordsRemoved, "tombstones_removed", res.TombstonesRemoved, "batches_merged", res.BatchesMerged,
		"dirty_ratio", res.DirtyRatio, "offset", res.CleanedTo, "min_dirty_ratio", cc.MinDirtyRatio, "overdue", res.Overdue)
	return o
}

// SetCleanerThrottle sets the rate, in bytes per second, at which the log
// cleaner may read and write (0: unlimited). A pass under way keeps it from
// its next step on (a sleep already begun runs out).
func (b *Broker) SetCleanerThrottle(rate int64) {
	if old := b.cleanerThrottle.setRate(rate, b.cfg.Now()); old != max(rate, 0) {
		b.log.Info("log cleaner throttle changed", "bytes_per_sec", max(rate, 0), "was", old)
	}
}

// throttleCleaner is every pass's segment.CompactOptions.Throttle: it
// charges the n bytes a pass read or wrote to the cleaner's bucket and,
// when the bucket is in debt, sleeps until it is paid (or ctx ends), so
// that all passes together stay within Config.CleanerIOMaxBytesPerSec
// (plus a second's worth and one batch). The time asleep is counted.
func (b *Broker) throttleCleaner(ctx context.Context, n int) error {
	if b.cleanerThrottle.limit() <= 0 {
		return nil
	}
	now := b.cfg.Now()
	b.cleanerThrottle.charge(n, now)
	d := b.cleanerThrottle.wait(now)
	if d <= 0 {
		return nil
	}
	b.counters.cleanerThrottledNanos.Add(int64(d))
	if h := b.hooks.cleanerSleep.Load(); h != nil {
		return (*h)(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// rollAgeOf is how long the active segment of a partition in state st
// stays open (segment.Log.SetRollAge): the topic's segment.ms, else the
// node's Config.Log.RollAge, or the topic's max.compaction.lag.ms when it
// compacts and that is shorter, so that records waiting in the active
// segment reach the cleaner in time.
func (b *Broker) rollAgeOf(st PartitionState) time.Duration {
	age := b.cfg.Log.RollAge
	if st.SegmentMs > 0 {
		age = st.SegmentMs
	}
	if age == 0 {
		age = segment.DefaultRollAge
	}
	if m := st.Compaction.MaxLag; st.Cleanup.Compacts() && m > 0 && (age < 0 || m < age) {
		return m
	}
	return age
}

// compactOptions returns the options of a Compact call on the
// partition's log at time now (below its HW, with the topic's knobs) and
// the topic's knobs; ok is false when the topic is not compacted or the
// replica is stopped.
func (p *partition) compactOptions(now time.Time) (o segment.CompactOptions, cc CompactionConfig, ok bool) {
	p.mu.Lock()
	if p.mu.stopped || !p.mu.cleanup.Compacts() {
		p.mu.Unlock()
		return o, cc, false
	}
	cc, below := p.mu.compaction, p.mu.r.HW()
	p.mu.Unlock()
	o = segment.CompactOptions{Below: below, MinDirtyRatio: cc.MinDirtyRatio,
		MinLag: cc.MinLag, MaxLag: cc.MaxLag, DeleteRetention: cc.DeleteRetention, Now: now, Throttle: p.b.throttleCleaner,
		MaxMapBytes: p.b.cleanerMapBytes()}
	return o, cc, true
}

// compact runs one Compact call on the partition's log below its HW, at
// time now, with the topic's knobs; called is false, and nothing done, when
// the topic is not compacted or the replica is stopped.
func (p *partition) compact(ctx context.Context, now time.Time) (res segment.CompactResult, cc CompactionConfig, called bool, err error) {
	o, cc, ok := p.compactOptions(now)
	if !ok {
		return res, cc, false, nil
	}
	// A partition no longer written: its active segment is sealed once
	// it is as old as the roll age (segment.ms or max.compaction.lag.ms:
	// rollAgeOf), as an append would, so that its last records (a
	// tombstone deleting a customer's data, say) reach the cleaner
	// without one.
	if rolled, err := p.log.RollIfDue(); err != nil {
		return res, cc, true, err
	} else if rolled {
		p.lg.Debug("log cleaner sealed the active segment of an idle partition")
	}
	if h := p.b.hooks.compact.Load(); h != nil {
		res, err = (*h)(p.key, o)
	} else {
		res, err = p.log.Compact(ctx, o)
	}
	return res, cc, true, err
}
