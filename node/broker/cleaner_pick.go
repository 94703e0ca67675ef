package broker

import (
	"slices"
	"sync"
	"time"
)

// Ranking at each pick (Kafka's LogCleanerManager.grabFilthiestCompactedLog,
// which each cleaner thread calls for its next log). A pass ranks its
// partitions once at its start (cleanerTasks); then each time a worker
// takes its next partition (cleanQueue.take) the partitions not taken yet
// in this pass are ranked again and the worker takes the first in
// cleanOrder: a partition written a lot while the pass ran goes before one
// less dirty ranked above it at the start, and one that another caller's
// compaction (or retention, or a truncation) made clean goes down. A
// partition taken in a pass is not taken again in it, and no two workers
// ever hold the same one.
//
// The cost is bounded. Dirtiness reads a log's first dirty batch (about
// 24 µs a log), too much to call on every log at every pick with thousands
// of partitions (a pass would cost quadratic time). So a pick calls it
// again only on the logs that moved since their last ranking, by their
// logMark (HW, log start and end, size: a few loads under the log's and
// the partition's locks, well under a microsecond), and on at most
// maxRerankPerPick of them, those ranked longest ago first; the others keep
// their ranking until a later pick. A pick thus costs a logMark per
// partition left plus at most maxRerankPerPick Dirtiness calls
// (BenchmarkCleanQueueTake). A log nobody wrote keeps its ranking for the
// pass: only its clock-driven parts (min.compaction.lag.ms,
// max.compaction.lag.ms, delete.retention.ms) could have changed, and the
// next pass sees them.

// maxRerankPerPick bounds the Dirtiness calls of one pick.
const maxRerankPerPick = 64

// logMark is what a log's Dirtiness depends on that changes without the
// cleaner: the replica's HW (a pass's bound), the log's start and end
// offsets and its size (appends, truncations, retention, another caller's
// compaction).
type logMark struct{ below, start, end, size int64 }

// logMark returns the partition's logMark now.
func (p *partition) logMark() logMark {
	p.mu.Lock()
	below := p.mu.r.HW()
	p.mu.Unlock()
	return logMark{below: below, start: p.log.LogStartOffset(), end: p.log.LogEndOffset(), size: p.log.Size()}
}

// rankTask ranks t at now: its partition's compaction options, logMark and
// Dirtiness; ok is false when the partition is stopped or no longer
// compacted. Such a partition, or one whose log could not say, is not
// ranked (cleanOrder puts it last; its Compact call says why).
func (b *Broker) rankTask(t *cleanTask, now time.Time) (ok bool) {
	o, cc, ok := t.p.compactOptions(now)
	if !ok {
		t.ranked = false
		return false
	}
	t.maxLag = cc.MaxLag
	// The HW compactOptions read is the mark's bound: p.mu once, not twice.
	t.mark = logMark{below: o.Below, start: t.p.log.LogStartOffset(), end: t.p.log.LogEndOffset(), size: t.p.log.Size()}
	d, err := t.p.log.Dirtiness(o)
	t.d, t.ranked = d, err == nil
	return true
}

// cleanDone is a partition a pass's worker took, and what its Compact call
// did.
type cleanDone struct {
	t cleanTask
	o cleanOutcome
}

// cleanQueue hands a pass's partitions to its workers, the first in
// cleanOrder by a ranking refreshed at each pick, and collects what their
// calls did.
type cleanQueue struct {
	// rank ranks a task again (Broker.rankTask at the clock's now).
	rank func(t *cleanTask)

	mu sync.Mutex
	// left are the partitions not taken yet in this pass.
	left  []cleanTask
	picks int         // picks so far; a task's rankedAt is the pick that ranked it
	done  []cleanDone // in the order the calls ended
}

// take returns the partition to compact next, ranking those left again
// first (but at the first pick: the pass has just ranked them); ok is false
// when none is left.
func (q *cleanQueue) take() (t cleanTask, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.left) == 0 {
		return t, false
	}
	if q.picks > 0 {
		q.refreshLocked()
	}
	q.picks++
	i := 0
	for j := range q.left {
		if cleanOrder(q.left[j], q.left[i]) < 0 {
			i = j
		}
	}
	t = q.left[i]
	q.left = slices.Delete(q.left, i, i+1)
	return t, true
}

// refreshLocked ranks again the partitions left whose logs moved since
// their last ranking, at most maxRerankPerPick of them, those ranked
// longest ago first.
func (q *cleanQueue) refreshLocked() {
	var moved []int
	for i := range q.left {
		if t := &q.left[i]; t.p.logMark() != t.mark {
			moved = append(moved, i)
		}
	}
	slices.SortStableFunc(moved, func(x, y int) int { return q.left[x].rankedAt - q.left[y].rankedAt })
	for _, i := range moved[:min(len(moved), maxRerankPerPick)] {
		q.rank(&q.left[i])
		q.left[i].rankedAt = q.picks
	}
}

// finished records what the Compact call on t did.
func (q *cleanQueue) finished(t cleanTask, o cleanOutcome) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.done = append(q.done, cleanDone{t, o})
}
