package segment

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// SyncPolicy says when appended bytes are flushed to disk.
type SyncPolicy int

const (
	SyncAlways   SyncPolicy = iota // WaitDurable flushes (group commit)
	SyncInterval                   // a background flush every SyncInterval
	SyncNever                      // the OS decides
)

func (p SyncPolicy) String() string {
	switch p {
	case SyncAlways:
		return "always"
	case SyncInterval:
		return "interval"
	case SyncNever:
		return "never"
	}
	return fmt.Sprintf("SyncPolicy(%d)", int(p))
}

// ParseSyncPolicy parses "always", "never" or "interval=200ms" ("interval"
// alone means DefaultSyncInterval).
func ParseSyncPolicy(s string) (SyncPolicy, time.Duration, error) {
	switch s := strings.TrimSpace(s); {
	case s == "always":
		return SyncAlways, 0, nil
	case s == "never":
		return SyncNever, 0, nil
	case s == "interval":
		return SyncInterval, DefaultSyncInterval, nil
	case strings.HasPrefix(s, "interval="):
		d, err := time.ParseDuration(strings.TrimPrefix(s, "interval="))
		if err != nil || d <= 0 {
			return 0, 0, fmt.Errorf("segment: bad sync interval in %q (want e.g. interval=200ms)", s)
		}
		return SyncInterval, d, nil
	}
	return 0, 0, fmt.Errorf("segment: unknown fsync policy %q (want always, never or interval=DURATION)", s)
}

// groupCommit coalesces concurrent flush requests: while one flush runs, new
// waiters queue behind it, and the next flush covers all of them at once.
//
// Lock order: Log.mu before groupCommit.mu. A truncation lowers the durable
// mark (lower) in the same Log.mu critical section that lowers the log end,
// so no flush can record the old end as durable in between; waitFor
// therefore never calls leo (which takes Log.mu) while holding its own mutex.
type groupCommit struct {
	mu struct {
		sync.Mutex
		durable  int64         // every offset below is durable. Invariant: durable <= LEO
		inflight chan struct{} // closed when the running flush ends; nil when idle
		flushes  int64         // completed flushes (for tests and benchmarks)
		gen      uint64        // bumped by truncations; a flush that spans one does not count
	}
}

// waitFor returns once durable >= offset, running flush (which returns the
// offset it made durable) when no flush is running. It returns ctx.Err()
// when ctx ends first, also while a flush this caller started still runs:
// that flush completes on its own goroutine and still counts (the durable
// mark, the waiters queued behind it), so a stuck fsync holds no caller past
// its deadline (a produce answers Timeout by its request timeout). With a
// ctx that cannot end, the flush runs on the caller's goroutine.
func (g *groupCommit) waitFor(ctx context.Context, offset int64, flush func() (int64, error), leo func() int64) error {
	for {
		g.mu.Lock()
		if g.mu.durable >= offset {
			g.mu.Unlock()
			return nil
		}
		if ch := g.mu.inflight; ch != nil {
			g.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		g.mu.Unlock()
		if end := leo(); offset > end {
			return fmt.Errorf("segment: wait durable for offset %d beyond log end %d", offset, end)
		}
		g.mu.Lock()
		if g.mu.durable >= offset || g.mu.inflight != nil {
			g.mu.Unlock()
			continue // changed while leo ran
		}
		ch := make(chan struct{})
		g.mu.inflight = ch
		gen := g.mu.gen
		g.mu.Unlock()

		if ctx.Done() == nil {
			err := g.runFlush(gen, flush)
			close(ch)
			if err != nil {
				return err
			}
			continue
		}
		var err error
		go func() {
			err = g.runFlush(gen, flush)
			close(ch)
		}()
		select {
		case <-ch: // err is set before ch is closed
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// runFlush runs the inflight flush (started at truncation generation gen)
// and records what it made durable; the caller then closes the inflight
// channel.
func (g *groupCommit) runFlush(gen uint64, flush func() (int64, error)) error {
	target, err := flush()
	g.mu.Lock()
	g.mu.inflight = nil
	if err == nil && gen == g.mu.gen && target > g.mu.durable {
		g.mu.durable = target
	}
	g.mu.flushes++
	g.mu.Unlock()
	return err
}

// lower caps the durable watermark at a truncation; a flush that started
// before it does not count. Called with Log.mu held, together with the
// change of the log end.
func (g *groupCommit) lower(offset int64) {
	g.mu.Lock()
	g.mu.gen++
	if g.mu.durable > offset {
		g.mu.durable = offset
	}
	g.mu.Unlock()
}

func (g *groupCommit) set(offset int64) {
	g.mu.Lock()
	g.mu.durable = offset
	g.mu.Unlock()
}

func (g *groupCommit) flushCount() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.flushes
}
