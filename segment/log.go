package segment

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
)

// File names inside a log directory (see the package doc).
const (
	cleanShutdownFile = ".clean-shutdown"
	cleanerPointFile  = "cleaner-offset-checkpoint"
	logStartFile      = "log-start-offset"
	recoveryPointFile = "recovery-point"
	epochFile         = "leader-epoch-checkpoint"
)

// AppendInfo describes where an appended batch landed.
type AppendInfo struct {
	BaseOffset int64
	LastOffset int64
	Position   int64 // byte position in its segment
}

// Log is a partition directory of segments. All methods are safe for concurrent use.
//
// Lifecycle: Open recovers the directory and starts a background flusher
// (for SyncInterval and SyncNever); Close stops it, waits for a deletion in
// progress (DeleteBefore, DeleteRetained) to remove its files, flushes
// everything, trims the active segment, writes the clean-shutdown marker
// and drops the log's references to every mapping. Views obtained before Close stay valid
// until released; every other method returns ErrClosed afterwards. After an
// I/O error that leaves durability unknown (a failed flush), writes return
// ErrLogFailed; Close then skips the marker so that the next Open recovers.
type Log struct {
	dir    string
	opts   Options
	fs     FS
	logger *slog.Logger

	// deleteMu serialises the changes that move the log start or cut the
	// log (DeleteBefore, DeleteRetained, TruncateTo,
	// TruncateFullyAndStartAt) and Close, and is held across their I/O.
	// Appends never take it: a deletion does its fsyncs, renames and
	// unlinks under deleteMu alone (deletion.go). Take it before appendMu.
	deleteMu sync.Mutex
	// appendMu serializes every mutation (append, roll, truncation, and
	// the in-memory step of a deletion) and is held across the I/O of all
	// but deletions. Readers never take it.
	appendMu      sync.Mutex
	recoveryPoint int64 // (appendMu) value stored in recovery-point
	// epochsStale: the leader-epoch checkpoint on disk lags mu.epochs, because
	// rewriting it after a truncation found the disk full. The next append
	// rewrites it before publishing anything, and Close writes no clean
	// marker while it lags (recovery then rebuilds the cache). (appendMu)
	epochsStale bool

	mu struct {
		sync.RWMutex
		segs     []*segment // by base offset; the last one is active. Invariant: segs[i].next == segs[i+1].base
		logStart int64      // Invariant: segs[0].base <= logStart <= leo
		leo      int64      // Invariant: leo == segs[len-1].next
		epochs   epochCache
		closed   bool
	}

	gc     groupCommit
	failed atomic.Pointer[error]
	point  pointState // the active segment's recovery point (activepoint.go)
	// opened describes what Open did (for its log line and tests): the
	// bytes it scanned batch by batch, the position in the active segment
	// it resumed its scan from (-1: from the start, or trusted), and
	// whether the last shutdown was unclean.
	opened struct {
		scanned, resumedAt int64
		unclean            bool
		// torn: it truncated a damaged tail (TornAtOpen), or the corruption
		// a scrub found (scrub.go).
		torn bool
		// scrubbed: a scrub's mark for repair was found (and is removed
		// once the open succeeded).
		scrubbed bool
	}

	pendingMu sync.Mutex
	pending   []*segment // SyncNever: sealed segments not yet fsynced
	// syncing holds the segments a flushPending took from pending and is
	// fsyncing: not durable yet, so they too hold the recovery point back,
	// and a concurrent flushPending (Sync, Close) waits for them.
	syncing []*segment // (pendingMu)
	// synced, when non-nil, is closed (and cleared) whenever segments leave
	// syncing; a flushPending waiting for another's fsync sleeps on it.
	synced chan struct{} // (pendingMu)

	bgStop     chan struct{}
	bgStopOnce sync.Once // closes bgStop: Close may run concurrently
	bgDone     chan struct{}
	bgKick     chan struct{}

	// compactMu serialises compaction passes (Compact); cleanerPoint is
	// the first dirty offset (cleaner-offset-checkpoint), -1 until read,
	// and cleanerCut the lowest log end a truncation left since the
	// running pass began (compaction_point.go).
	compactMu    sync.Mutex
	cleanerMu    sync.Mutex
	cleanerPoint int64 // (cleanerMu)
	cleanerCut   int64 // (cleanerMu)
	// cleanerTombstone: oldestTombstone's cache, 0 until read
	// (compaction_tombstones.go).
	cleanerTombstone int64 // (compactMu)
	// compactSwapHook: tests, called by a pass once a segment's new files
	// are written, before it takes deleteMu to swap them in.
	compactSwapHook func()

	truncateHook func() // tests: called by TruncateTo once the cut is published, before its file I/O
	syncWaitHook func() // tests: called (pendingMu held; must not block) when a flushPending starts waiting for another's fsync
}

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

func (l *Log) active() *segment { return l.mu.segs[len(l.mu.segs)-1] }

// ioErr classifies a file-system error.
func (l *Log) ioErr(err error) error {
	if err == nil {
		return nil
	}
	if isNoSpace(err) {
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}

// fail makes the log refuse writes after an I/O error with unknown outcome.
func (l *Log) fail(err error) error {
	e := fmt.Errorf("%w: %w", ErrLogFailed, err)
	if l.failed.CompareAndSwap(nil, &e) {
		l.logger.Error("segment: log failed; reopen to recover", "dir", l.dir, "err", err)
		if l.opts.OnFailure != nil {
			l.opts.OnFailure(l.dir, e)
		}
	}
	return *l.failed.Load()
}

// Failed reports why the log refuses writes after an I/O error with unknown
// outcome (an error wrapping ErrLogFailed), or nil while it is healthy. Its
// log end offset may then count bytes that never became durable.
func (l *Log) Failed() error { return l.failErr() }

func (l *Log) failErr() error {
	if p := l.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// writableLocked checks that the log accepts writes. appendMu held.
func (l *Log) writableLocked() error {
	if l.mu.closed {
		return ErrClosed
	}
	return l.failErr()
}

// Read returns whole batches starting with the batch containing offset, at most
// maxBytes (but always at least one batch if any is there) and never past
// maxOffset (exclusive; use the HW for consumers, -1 for no limit). Batches come
// from one segment; read again from View.Next for more. The View must be
// released.
func (l *Log) Read(offset int64, maxBytes int, maxOffset int64) (*View, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.mu.closed {
		return nil, ErrClosed
	}
	if offset < l.mu.logStart || offset > l.mu.leo {
		return nil, &OffsetOutOfRangeError{Requested: offset, Start: l.mu.logStart, End: l.mu.leo}
	}
	if offset == l.mu.leo || (maxOffset >= 0 && offset >= maxOffset) {
		return &View{Next: offset}, nil
	}
	segs := l.mu.segs
	i := sort.Search(len(segs), func(i int) bool { return segs[i].base > offset }) - 1
	s := segs[i]
	start, err := l.findBatch(s, offset)
	if err != nil {
		return nil, err
	}
	end, next, want := start, offset, int64(-1)
	for end < s.size {
		size, _, last, _, err := s.batchAt(end, want)
		if err != nil {
			return nil, err
		}
		want = last + 1
		if maxOffset >= 0 && last >= maxOffset {
			break
		}
		if end > start && end-start+size > int64(maxBytes) {
			break
		}
		end += size
		next = last + 1
	}
	if end == start {
		return &View{Next: offset}, nil
	}
	s.mp.acquire()
	return &View{Data: s.mp.data[start:end:end], Next: next, mp: s.mp}, nil
}

// TornAtOpen reports whether Open truncated a damaged tail of the log (a
// batch that failed its checks after the last good one): a write cut by a
// crash, or data damaged on disk. What the tail held is gone, and under
// --fsync always it may have been acknowledged (damage, not a crash).
func (l *Log) TornAtOpen() bool { return l.opened.torn }

// LogStartOffset and LogEndOffset (the offset the next record will get).
func (l *Log) LogStartOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.logStart
}

func (l *Log) LogEndOffset() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.mu.leo
}

// Size returns the bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var n int64
	for _, s := range l.mu.segs {
		n += s.size
	}
	return n
}

// Segments returns the base offsets of the segments, oldest first.
func (l *Log) Segments() []int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]int64, len(l.mu.segs))
	for i, s := range l.mu.segs {
		out[i] = s.base
	}
	return out
}
