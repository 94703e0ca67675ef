package broker

import (
	"cmp"
	"sync"
	"time"

	"paymentlog/segment"
)

// Several cleaner threads (Kafka's log.cleaner.threads,
// Config.CleanerThreads). A pass (CompactNow) first ranks the compacted
// partitions by what their logs' segment.Log.Dirtiness says now (sizes and
// checkpoints, no record read but each log's first dirty batch): those a
// Compact would clean before the others, and among them those whose dirty
// records are past max.compaction.lag.ms first, then the dirtiest (Kafka's
// LogCleanerManager.grabFilthiestCompactedLog; cleanOrder). Then
// Config.CleanerThreads workers take the partitions in that order, each the
// next one no other worker took, so that no two ever compact the same log,
// until every partition had its Compact call (those with nothing to do
// too: it is what seals an idle partition's active segment, and it costs
// what Dirtiness did) or ctx ends. Unlike Kafka's threads, which rank the
// logs again at each pick, a pass ranks them once, at its start: the next
// pass, Config.CleanerInterval later, sees what was written meanwhile.
//
// What the workers share:
//
//   - The I/O throttle (Config.CleanerIOMaxBytesPerSec): one bucket for the
//     node (b.cleanerThrottle), charged by every worker's reads and writes,
//     so the node's cleaner stays within the rate however many workers run
//     (plus a second's worth and one batch per worker).
//   - The key maps' memory (Config.CleanerDedupeBufferSize): each worker's
//     pass gets an equal share (cleanerMapBytes), as Kafka divides
//     log.cleaner.dedupe.buffer.size among its threads, so that the
//     workers' maps together stay within it.
//
// With one worker (the default) a pass runs in the caller's goroutine.

// DefaultCleanerThreads is Config.CleanerThreads when 0 (Kafka's
// log.cleaner.threads default).
const DefaultCleanerThreads = 1

// cleanTask is a compacted partition a pass gives a Compact call, with
// what its log said when the pass ranked it.
type cleanTask struct {
	p   *partition
	key tp
	// d is the log's Dirtiness at the pass's start; ranked is false when
	// it could not say (the log closed, failed or being compacted by some
	// other caller): the partition goes last, and its Compact call
	// reports why.
	d      segment.Dirtiness
	ranked bool
	maxLag time.Duration // the topic's max.compaction.lag.ms (0: none)
}

// cleanOrder is the order in which a pass compacts its partitions: those
// whose Compact would run (Dirtiness.Due) first; among them those whose
// dirty records are past max.compaction.lag.ms, then the highest dirty
// ratio; ties, and the partitions with nothing due, by topic and
// partition.
func cleanOrder(x, y cleanTask) int {
	due := func(t cleanTask) bool { return t.ranked && t.d.Due }
	if c := -cmpBool(due(x), due(y)); c != 0 {
		return c
	}
	if due(x) {
		if c := cmp.Or(-cmpBool(x.d.Overdue, y.d.Overdue), -cmp.Compare(x.d.DirtyRatio, y.d.DirtyRatio)); c != 0 {
			return c
		}
	}
	return cmp.Or(cmp.Compare(x.key.topic, y.key.topic), cmp.Compare(x.key.partition, y.key.partition))
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// cleanerMapBytes is each pass's segment.CompactOptions.MaxMapBytes: the
// node's Config.CleanerDedupeBufferSize (0: segment's default) with one
// worker, an equal share of it with several.
func (b *Broker) cleanerMapBytes() int64 {
	n := int64(max(b.cfg.CleanerThreads, 1))
	if n == 1 {
		return b.cfg.CleanerDedupeBufferSize
	}
	total := b.cfg.CleanerDedupeBufferSize
	if total <= 0 {
		total = segment.DefaultCompactMaxMapBytes
	}
	return max(total/n, 1)
}

// cleanerStats is what the log cleaner's last pass found and took
// (Stats: Kafka's LogCleaner gauges).
type cleanerStats struct {
	mu sync.Mutex
	// lastRun is when the last pass ended (before any: when the broker
	// started).
	lastRun time.Time
	// maxDirtyRatio, maxDelay: the highest dirty ratio of the compacted
	// partitions when the last pass ranked them, and how long past its
	// max.compaction.lag.ms the most overdue one's first dirty batch was.
	maxDirtyRatio float64
	maxDelay      time.Duration
	// maxClean is the longest Compact call of the last pass.
	maxClean time.Duration
	// uncleanable counts the partitions whose Compact call failed in the
	// last pass (not the quiet errors: a log closed or compacted by some
	// other caller).
	uncleanable int
}

// ranked records what a pass found when it ranked tasks at now.
func (s *cleanerStats) ranked(tasks []cleanTask, now time.Time) {
	var ratio float64
	var delay time.Duration
	for _, t := range tasks {
		if !t.ranked {
			continue
		}
		ratio = max(ratio, t.d.DirtyRatio)
		if t.d.Overdue && t.d.FirstDirtyTimestamp >= 0 {
			delay = max(delay, now.Sub(time.UnixMilli(t.d.FirstDirtyTimestamp))-t.maxLag)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.maxDirtyRatio, s.maxDelay = ratio, delay
}

// ended records the end of a pass, at now.
func (s *cleanerStats) ended(now time.Time, maxClean time.Duration, uncleanable int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRun, s.maxClean, s.uncleanable = now, maxClean, uncleanable
}

// CleanerStats is what Stats reports of the log cleaner's last pass.
type CleanerStats struct {
	// MaxDirtyRatio is the highest dirty ratio (dirty bytes over cleanable
	// bytes) of the compacted partitions when the last pass ranked them
	// (Kafka's max-dirty-percent, over every compacted partition here).
	MaxDirtyRatio float64
	// SinceLastRun is the time since the last pass ended (since the broker
	// started before any: Kafka's time-since-last-run-ms).
	SinceLastRun time.Duration
	// MaxCleanTime is the longest partition's Compact call in the last
	// pass (Kafka's max-clean-time-secs).
	MaxCleanTime time.Duration
	// MaxCompactionDelay is how far past its max.compaction.lag.ms the
	// most overdue partition's dirty records were when the last pass
	// ranked them (Kafka's max-compaction-delay-secs; 0: none overdue).
	MaxCompactionDelay time.Duration
	// Uncleanable counts the partitions whose Compact call failed in the
	// last pass (Kafka's uncleanable-partitions-count; here the next pass
	// tries them again).
	Uncleanable int
}

// snapshot returns the stats at now.
func (s *cleanerStats) snapshot(now time.Time) CleanerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return CleanerStats{MaxDirtyRatio: s.maxDirtyRatio, SinceLastRun: max(now.Sub(s.lastRun), 0), MaxCleanTime: s.maxClean,
		MaxCompactionDelay: s.maxDelay, Uncleanable: s.uncleanable}
}
