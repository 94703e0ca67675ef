package broker

import (
	"cmp"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/segment"
)

// Several cleaner threads (Kafka's log.cleaner.threads: Config.CleanerThreads,
// or the cluster's log.cleaner.threads through SetCleanerThreads, taken by
// the next pass). A pass (CompactNow) first ranks the compacted
// partitions by what their logs' segment.Log.Dirtiness says now (sizes and
// checkpoints, no record read but each log's first dirty batch): those a
// Compact would clean before the others, and among them those whose dirty
// records are past max.compaction.lag.ms first, then the dirtiest (Kafka's
// LogCleanerManager.grabFilthiestCompactedLog; cleanOrder). Then the pass's
// workers (CleanerThreads when it starts) take the partitions, each the
// first in that order, ranked again, of those no worker took yet
// (cleaner_pick.go), so that no two ever compact the same log, until every
// partition had its Compact call (those with nothing to do too: it is what
// seals an idle partition's active segment, and it costs what Dirtiness
// did) or ctx ends.
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

// MinCleanerMapBytesPerThread is the least share of the dedupe buffer
// (Config.CleanerDedupeBufferSize) a cleaner thread may get: the node's
// --log-cleaner-threads is refused, and the cluster's log.cleaner.threads
// clamped (SetCleanerThreads), above the buffer over it.
const MinCleanerMapBytesPerThread = 1 << 20

// MaxCleanerThreads is the most cleaner threads a dedupe buffer of
// bufferSize bytes (0: segment's default) allows: a share of at least
// MinCleanerMapBytesPerThread each, and 1 whatever the buffer.
func MaxCleanerThreads(bufferSize int64) int {
	if bufferSize <= 0 {
		bufferSize = segment.DefaultCompactMaxMapBytes
	}
	return int(max(bufferSize/MinCleanerMapBytesPerThread, 1))
}

// SetCleanerThreads sets how many partitions the log cleaner compacts at
// once, from the next pass on (a pass under way keeps its workers): n, or
// Config.CleanerThreads when n <= 0, clamped to what the dedupe buffer
// allows (MaxCleanerThreads; logged at Warn). The node calls it with the
// cluster's log.cleaner.threads, else its --log-cleaner-threads.
func (b *Broker) SetCleanerThreads(n int) {
	asked := max(n, 0)
	old := b.cleaner.threadsAsked.Swap(int64(asked))
	if most := MaxCleanerThreads(b.cfg.CleanerDedupeBufferSize); n > most {
		if old != int64(asked) {
			b.log.Warn("log cleaner threads clamped to what the dedupe buffer allows", "asked", n, "threads", most,
				"dedupe_buffer_bytes", b.cfg.CleanerDedupeBufferSize)
		}
		n = most
	}
	was := b.CleanerThreads()
	b.cleaner.threads.Store(int64(max(n, 0)))
	if now := b.CleanerThreads(); now != was {
		b.log.Info("log cleaner threads changed", "threads", now, "was", was)
	}
}

// CleanerThreads is how many partitions the next cleaner pass compacts at
// once (SetCleanerThreads, else Config.CleanerThreads).
func (b *Broker) CleanerThreads() int {
	if n := b.cleaner.threads.Load(); n > 0 {
		return int(n)
	}
	return max(b.cfg.CleanerThreads, 1)
}

// startCleanerPass fixes the thread count of the pass starting
// (cleanerMapBytes divides the dedupe buffer by it) and returns it.
func (b *Broker) startCleanerPass() int {
	n := b.CleanerThreads()
	b.cleaner.passThreads.Store(int64(n))
	return n
}

// cleanTask is a compacted partition a pass gives a Compact call, with
// what its log said when the pass last ranked it.
type cleanTask struct {
	p   *partition
	key tp
	// d is the log's Dirtiness when last ranked; ranked is false when
	// it could not say (the log closed, failed or being compacted by some
	// other caller): the partition goes last, and its Compact call
	// reports why.
	d      segment.Dirtiness
	ranked bool
	maxLag time.Duration // the topic's max.compaction.lag.ms (0: none)
	// mark is the log's logMark when it was ranked, at the pass's
	// rankedAt-th pick (0: its start; cleaner_pick.go).
	mark     logMark
	rankedAt int
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
// worker, an equal share of it with several (the thread count of the pass
// under way, or of the last one: a change applies from a pass's start, so
// that its workers' maps together stay within the buffer).
func (b *Broker) cleanerMapBytes() int64 {
	n := b.cleaner.passThreads.Load()
	if n <= 0 {
		n = int64(b.CleanerThreads())
	}
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
// (Stats: Kafka's LogCleaner gauges), and the cleaner's state between
// passes: its thread count and the partitions set aside.
type cleanerStats struct {
	// threads is SetCleanerThreads' count (0: Config.CleanerThreads),
	// threadsAsked what it was asked before clamping; passThreads is the
	// thread count of the pass under way, or of the last one (0: none
	// yet).
	threads, threadsAsked, passThreads atomic.Int64
	// uncleanable are the partitions set aside (cleaner_uncleanable.go).
	uncleanable uncleanableSet

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
func (s *cleanerStats) ended(now time.Time, maxClean time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastRun, s.maxClean = now, maxClean
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
	// Uncleanable counts the partitions set aside because their Compact
	// call failed (Kafka's uncleanable-partitions-count; here tried again
	// after a backoff: cleaner_uncleanable.go), and UncleanableBytes their
	// dirty bytes when a pass last ranked them (Kafka's uncleanable-bytes).
	Uncleanable      int
	UncleanableBytes int64
}

// snapshot returns the stats at now.
func (s *cleanerStats) snapshot(now time.Time) CleanerStats {
	n, bytes := s.uncleanable.totals()
	s.mu.Lock()
	defer s.mu.Unlock()
	return CleanerStats{MaxDirtyRatio: s.maxDirtyRatio, SinceLastRun: max(now.Sub(s.lastRun), 0), MaxCleanTime: s.maxClean,
		MaxCompactionDelay: s.maxDelay, Uncleanable: n, UncleanableBytes: bytes}
}
