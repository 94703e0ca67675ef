package client

import (
	"context"
	"sync"
)

// budget bounds the bytes of records buffered but not yet resolved.
// acquire blocks while the budget is spent (a single record larger than the
// whole budget is let through when nothing else is buffered).
type budget struct {
	limit int64
	mu    struct {
		sync.Mutex
		used    int64
		records int64         // records outstanding
		changed chan struct{} // closed and replaced whenever used or records fall
		closed  bool
	}
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.mu.changed = make(chan struct{})
	return b
}

func (b *budget) acquire(ctx context.Context, n int64) error {
	for {
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			return ErrProducerClosed
		}
		if b.mu.used == 0 || b.mu.used+n <= b.limit {
			b.mu.used += n
			b.mu.records++
			b.mu.Unlock()
			return nil
		}
		ch := b.mu.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *budget) release(bytes, records int64) {
	b.mu.Lock()
	b.mu.used -= bytes
	b.mu.records -= records
	close(b.mu.changed)
	b.mu.changed = make(chan struct{})
	b.mu.Unlock()
}

// waitEmpty returns once no record is outstanding, or ctx ends.
func (b *budget) waitEmpty(ctx context.Context) error {
	for {
		b.mu.Lock()
		if b.mu.records == 0 {
			b.mu.Unlock()
			return nil
		}
		ch := b.mu.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (b *budget) outstanding() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.records
}

// close makes every waiting and future acquire fail.
func (b *budget) close() {
	b.mu.Lock()
	b.mu.closed = true
	close(b.mu.changed)
	b.mu.changed = make(chan struct{})
	b.mu.Unlock()
}
