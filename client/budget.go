package client

import (
	"context"
	"sync"
)

// budget bounds the bytes of records buffered but not yet resolved.
// acquire blocks while the budget is spent (a single record larger than the
// whole budget is let through when nothing else is buffered).
//
// Records are counted per generation so that a flush can wait for the
// records acquired before it without waiting for those acquired after it
// (under a steady stream of Produce calls nothing may ever be outstanding).
type budget struct {
	limit int64
	mu    struct {
		sync.Mutex
		used    int64
		records int64            // records outstanding
		gen     uint64           // the generation of records acquired now; mark starts the next
		byGen   map[uint64]int64 // records outstanding per generation; no zero entries
		changed chan struct{}    // closed and replaced whenever used or records fall
		closed  bool
	}
}

// genCount is a number of records of one generation.
type genCount struct {
	gen uint64
	n   int64
}

func newBudget(limit int64) *budget {
	b := &budget{limit: limit}
	b.mu.changed = make(chan struct{})
	b.mu.byGen = map[uint64]int64{}
	return b
}

// acquire takes n bytes for one record and returns the record's generation.
func (b *budget) acquire(ctx context.Context, n int64) (uint64, error) {
	for {
		b.mu.Lock()
		if b.mu.closed {
			b.mu.Unlock()
			return 0, ErrProducerClosed
		}
		if b.mu.used == 0 || b.mu.used+n <= b.limit {
			b.mu.used += n
			b.mu.records++
			g := b.mu.gen
			b.mu.byGen[g]++
			b.mu.Unlock()
			return g, nil
		}
		ch := b.mu.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// release gives back bytes and the records counted in gens.
func (b *budget) release(bytes int64, gens []genCount) {
	b.mu.Lock()
	b.mu.used -= bytes
	for _, g := range gens {
		b.mu.records -= g.n
		if b.mu.byGen[g.gen] -= g.n; b.mu.byGen[g.gen] <= 0 {
			delete(b.mu.byGen, g.gen)
		}
	}
	close(b.mu.changed)
	b.mu.changed = make(chan struct{})
	b.mu.Unlock()
}

// waitAcquired returns once every record acquired before the call is
// resolved, or ctx ends.
func (b *budget) waitAcquired(ctx context.Context) error {
	b.mu.Lock()
	last := b.mu.gen
	b.mu.gen++
	b.mu.Unlock()
	for {
		b.mu.Lock()
		pending := false
		for g := range b.mu.byGen {
			if g <= last {
				pending = true
				break
			}
		}
		ch := b.mu.changed
		b.mu.Unlock()
		if !pending {
			return nil
		}
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
