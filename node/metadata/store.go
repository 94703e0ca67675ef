package metadata

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Store holds the current Image and applies committed metadata log entries to
// it. It implements raftnode.StateMachine. Readers call Image (never blocks on
// raft); reactors Subscribe. Apply never blocks on a subscriber: changes a
// subscriber has not taken yet are merged into one pending Change.
//
// Lifecycle: NewStore, then hand it to raftnode as its StateMachine; there is
// nothing to close (Subscriptions are closed by their owners).
type Store struct {
	log *slog.Logger
	// img is the current image: stored under mu (with changed and the
	// subscriptions' offers), read without it, since every produce and
	// fetch partition reads it (the broker's topic-id check).
	img atomic.Pointer[Image]
	mu  struct {
		sync.Mutex
		err     error         // first entry that failed to decode
		changed chan struct{} // closed and replaced on every change
		subs    map[*Subscription]struct{}
	}
}

// StoreOption configures a Store.
type StoreOption func(*Store)

// WithLogger sets the store's logger (default slog.Default()).
func WithLogger(l *slog.Logger) StoreOption { return func(s *Store) { s.log = l } }

// NewStore returns a store holding the empty image.
func NewStore(opts ...StoreOption) *Store {
	s := &Store{log: slog.Default()}
	for _, o := range opts {
		o(s)
	}
	s.img.Store(EmptyImage())
	s.mu.changed = make(chan struct{})
	s.mu.subs = map[*Subscription]struct{}{}
	return s
}

// Image returns the current image (immutable; safe to keep).
func (s *Store) Image() *Image { return s.img.Load() }

// Err returns the first decode failure of a committed entry, if any. A
// corrupt entry is skipped on every node alike. One with a record type or
// version this build does not know (ErrUnknownRecord) was written by a
// newer build, which the others apply: the node stops on it (watchMetadata).
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.err
}

// Changed returns a channel closed at the next change of the image.
func (s *Store) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.changed
}

// WaitFor blocks until pred holds for the current image and returns that
// image, or returns ctx's error.
func (s *Store) WaitFor(ctx context.Context, pred func(*Image) bool) (*Image, error) {
	for {
		s.mu.Lock()
		img, ch := s.img.Load(), s.mu.changed
		s.mu.Unlock()
		if pred(img) {
			return img, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return img, ctx.Err()
		}
	}
}

// Apply applies one committed entry (raftnode.StateMachine). Entries at or
// below the current offset were applied already and are ignored.
func (s *Store) Apply(index uint64, data []byte) {
	cur := s.Image() // only raft's apply loop changes the image
	if index <= cur.offset {
		return
	}
	records, derr := DecodeEntry(data)
	next, d, aerr := cur.ApplyEntry(index, records)
	if aerr != nil {
		s.log.Debug("metadata records rejected", "offset", index, "err", aerr)
	}
	if derr != nil {
		s.log.Error("metadata entry cannot be decoded; skipped", "offset", index, "err", derr)
	}
	s.publish(cur, next, d, derr)
}

// Snapshot encodes the current image (raftnode.StateMachine).
func (s *Store) Snapshot() ([]byte, error) {
	return s.Image().MarshalSnapshot(), nil
}

// CheckSnapshot reports whether Restore would accept a snapshot, changing
// nothing (raftnode.SnapshotChecker): raftnode asks before it persists a
// snapshot from the leader, and refuses one this build cannot decode (a
// format version it does not read, contents that break an invariant)
// instead of writing it and stopping.
func (s *Store) CheckSnapshot(index uint64, data []byte) error {
	_, err := UnmarshalSnapshot(index, data)
	return err
}

// Restore replaces the image with a snapshot taken at index
// (raftnode.StateMachine). Subscribers get the difference as one change.
func (s *Store) Restore(index uint64, data []byte) error {
	img, err := UnmarshalSnapshot(index, data)
	if err != nil {
		return err
	}
	cur := s.Image()
	s.publish(cur, img, Diff(cur, img), nil)
	return nil
}

func (s *Store) publish(prev, next *Image, d Delta, derr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if derr != nil && s.mu.err == nil {
		s.mu.err = derr
	}
	s.img.Store(next)
	for sub := range s.mu.subs {
		sub.offerLocked(prev, next, d)
	}
	close(s.mu.changed)
	s.mu.changed = make(chan struct{})
}

// Change is one step (or several merged) of the image.
type Change struct {
	Prev, Next *Image
	Delta      Delta
}

// ErrSubscriptionClosed is returned by Next after Close.
var ErrSubscriptionClosed = errors.New("metadata: subscription closed")

// Subscription delivers image changes in order. Changes not yet taken are
// merged, so a slow subscriber costs memory proportional to what changed, not
// to how many entries were applied, and never slows the raft apply loop.
type Subscription struct {
	s      *Store
	notify chan struct{} // capacity 1: a change is pending
	// Guarded by s.mu.
	pending *Change
	closed  bool
}

// Subscribe starts a subscription. Its first Change goes from the empty
// image to the current one (everything appears as created), so a subscriber
// needs no separate initial load.
func (s *Store) Subscribe() *Subscription {
	sub := &Subscription{s: s, notify: make(chan struct{}, 1)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.subs[sub] = struct{}{}
	empty := EmptyImage()
	cur := s.img.Load()
	sub.offerLocked(empty, cur, Diff(empty, cur))
	return sub
}

func (sub *Subscription) offerLocked(prev, next *Image, d Delta) {
	if sub.closed {
		return
	}
	if sub.pending == nil {
		sub.pending = &Change{Prev: prev, Next: next, Delta: d}
	} else {
		sub.pending.Next = next
		sub.pending.Delta = sub.pending.Delta.Merge(d)
	}
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}

// C receives a value whenever a change may be pending; then call TryNext.
func (sub *Subscription) C() <-chan struct{} { return sub.notify }

// TryNext takes the pending change, if any.
func (sub *Subscription) TryNext() (Change, bool) {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	if sub.pending == nil {
		return Change{}, false
	}
	c := *sub.pending
	sub.pending = nil
	return c, true
}

// Next waits for and takes the pending change.
func (sub *Subscription) Next(ctx context.Context) (Change, error) {
	for {
		if c, ok := sub.TryNext(); ok {
			return c, nil
		}
		sub.s.mu.Lock()
		closed := sub.closed
		sub.s.mu.Unlock()
		if closed {
			return Change{}, ErrSubscriptionClosed
		}
		select {
		case <-sub.notify:
		case <-ctx.Done():
			return Change{}, ctx.Err()
		}
	}
}

// Close ends the subscription; a blocked Next returns ErrSubscriptionClosed.
func (sub *Subscription) Close() {
	sub.s.mu.Lock()
	defer sub.s.mu.Unlock()
	if sub.closed {
		return
	}
	sub.closed = true
	sub.pending = nil
	delete(sub.s.mu.subs, sub)
	select {
	case sub.notify <- struct{}{}:
	default:
	}
}
