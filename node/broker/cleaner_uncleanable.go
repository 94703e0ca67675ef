package broker

import (
	"sync"
	"time"
)

// Uncleanable partitions (Kafka's LogCleanerManager.uncleanablePartitions).
// A partition whose Compact call fails with a real error (not one of the
// quiet ones of cleanOne: ctx ended, the log closed, another caller's pass
// on the log) is set aside: the passes skip it for a while, so that a log
// the cleaner cannot read (a damaged batch, an unreadable file) does not
// fail, and fill the node's log, every Config.CleanerInterval, and does not
// take a worker from the partitions that can be cleaned. Unlike Kafka,
// which skips it until the log directory comes back (a restart), it is
// tried again after a backoff that doubles: skipped for 1 pass after its
// first failure, then 2, 4, 8 … passes after each further one, up to an
// hour's worth (uncleanableMaxSkip: 240 passes at the default 15 s), so
// that a fault that goes away (a disk replaced, a file restored, space
// freed) heals without a restart, while one that stays costs a line and a
// failed call an hour. A retry that succeeds takes it out of the set.
//
// The set is keyed by the partition's replica (*partition): one deleted,
// moved to other nodes, stopped or re-created, or whose topic stops
// compacting, leaves the set at the next pass (prune). Stats report how
// many partitions are in it and their dirty bytes, as the pass that last
// ranked them found (Kafka's uncleanable-partitions-count and
// uncleanable-bytes).

// uncleanableMaxBackoff bounds how long a partition stays set aside
// between two tries (in passes: uncleanableMaxSkip).
const uncleanableMaxBackoff = time.Hour

// uncleanableMaxSkip is how many passes, at most, an uncleanable partition
// is skipped between two tries: uncleanableMaxBackoff's worth of passes
// interval apart (DefaultCleanerInterval when there is no cleaner loop).
func uncleanableMaxSkip(interval time.Duration) int {
	if interval <= 0 {
		interval = DefaultCleanerInterval
	}
	return int(max((uncleanableMaxBackoff+interval-1)/interval, 1))
}

// uncleanableSkip is how many passes a partition whose compaction failed
// failures times in a row is skipped: 1, 2, 4, … up to most.
func uncleanableSkip(failures, most int) int {
	if failures <= 0 {
		return 0
	}
	if failures > 30 || 1<<(failures-1) > most {
		return most
	}
	return 1 << (failures - 1)
}

// uncleanable is one set-aside partition.
type uncleanable struct {
	// failures counts its failed passes in a row; skip the passes left
	// before the next try.
	failures, skip int
	dirtyBytes     int64 // Dirtiness.DirtyBytes when a pass last ranked it
}

// uncleanableSet is the cleaner's set-aside partitions. Passes change it
// (their workers concurrently, each on its own partition); Stats read it.
type uncleanableSet struct {
	mu sync.Mutex
	m  map[*partition]*uncleanable
}

// prune forgets the partitions not in live (deleted, moved, stopped,
// re-created, no longer compacted).
func (s *uncleanableSet) prune(live map[*partition]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.m {
		if !live[p] {
			delete(s.m, p)
		}
	}
}

// pass records p's dirty bytes as a pass ranked them and reports whether
// the pass skips p: it is set aside and its backoff has passes left (one
// is used up).
func (s *uncleanableSet) pass(p *partition, dirtyBytes int64, ranked bool) (skip bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.m[p]
	if u == nil {
		return false
	}
	if ranked {
		u.dirtyBytes = dirtyBytes
	}
	if u.skip > 0 {
		u.skip--
		return true
	}
	return false
}

// failed sets p aside after a failed pass, for a backoff of at most most
// passes; first is true when it was not set aside already, and skip is
// how many passes it is skipped.
func (s *uncleanableSet) failed(p *partition, dirtyBytes int64, most int) (first bool, skip int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.m[p]
	if first = u == nil; first {
		if s.m == nil {
			s.m = map[*partition]*uncleanable{}
		}
		u = &uncleanable{dirtyBytes: dirtyBytes}
		s.m[p] = u
	}
	u.failures++
	u.skip = uncleanableSkip(u.failures, most)
	return first, u.skip
}

// cleaned takes p out of the set after a pass that did not fail; it
// returns how many failed passes in a row it had (0: it was not set aside).
func (s *uncleanableSet) cleaned(p *partition) (failures int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u := s.m[p]; u != nil {
		failures = u.failures
		delete(s.m, p)
	}
	return failures
}

// totals returns how many partitions are set aside and their dirty bytes.
func (s *uncleanableSet) totals() (n int, dirtyBytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.m {
		n++
		dirtyBytes += u.dirtyBytes
	}
	return n, dirtyBytes
}
