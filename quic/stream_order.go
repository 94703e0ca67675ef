package quic

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Stream order. A connection's streams are accepted in the order of their
// ids, which is the order the peer opened them, and a peer that chains its
// Calls with WriteAfter opens them in the order it made the Calls. But each
// accepted stream is served on a goroutine of its own, so the handlers of
// two requests a peer sent in order may reach shared state in the other
// order (over TCP, as Kafka runs, one connection's requests are read and
// served one at a time). A handler registered with HandleOrdered gets its
// stream's place in its connection's accept order (StreamOrderOf) and can
// wait, before it acts on a key (a partition, say), until every earlier
// stream of the connection has settled that key: it is a request of another
// type, or did not name the key, or has done what it does for the key.
//
// Every accepted stream holds its place from accept until it is released:
// a stream of any type not registered with HandleOrdered, a ping, and a
// stream refused or failed before its handler ran release it as soon as
// its first frame is read (or fails), so a fetch long-poll or a session
// holds nothing; an ordered handler's stream releases it when the handler
// calls Declare (the keys it will act on, each released by Done) or
// Release, or at the latest once the handler has returned. An earlier
// stream whose request has not arrived (the peer has not sent it all, or
// its packets are late) holds later streams for at most the bound the
// first waiter gives Await: it is then passed over, by that waiter and by
// every later one, until it declares its keys, and Await says so.
//
// Streams that never wait pay two short critical sections each (accept and
// release), on a mutex of their connection.

// StreamOrder is a stream's place in its connection's accept order, handed
// to a handler registered with HandleOrdered (see StreamOrderOf). Its
// methods may be called from any goroutine; on a nil *StreamOrder they do
// nothing (a handler called without one, in a test, say).
type StreamOrder struct {
	seq *streamSeq
	n   uint64
}

type streamOrderKey struct{}

// StreamOrderOf returns the place of the stream ctx belongs to, or nil when
// its handler was not registered with HandleOrdered.
func StreamOrderOf(ctx context.Context) *StreamOrder {
	o, _ := ctx.Value(streamOrderKey{}).(*StreamOrder)
	return o
}

// HandleOrdered registers h for frame type t, as Handle does, and gives it
// its stream's place in its connection's accept order: StreamOrderOf(ctx).
// h must release the place (Declare, then Done for each key; or Release)
// as soon as later streams need not wait for it; the endpoint releases it
// once h returns.
func (e *Endpoint) HandleOrdered(t FrameType, h UnaryHandler) { e.handlers.setOrdered(t, h) }

// Declare says that the stream will act on keys (comparable values), in any
// order, and on no other: later streams stop waiting for it but on these,
// each until Done(key). Declaring no keys releases the stream. Once only,
// before any Done.
func (o *StreamOrder) Declare(keys []any) {
	if o != nil {
		o.seq.declare(o.n, keys)
	}
}

// Done says that the stream has acted on key (or given up on it); once
// every declared key is done, the stream is released.
func (o *StreamOrder) Done(key any) {
	if o != nil {
		o.seq.done(o.n, key)
	}
}

// Release frees the stream's place: later streams wait for it no more.
// Idempotent.
func (o *StreamOrder) Release() {
	if o != nil {
		o.seq.release(o.n)
	}
}

// Await waits until every earlier stream of the connection has released
// its place or declared its keys, and none of them still holds key, or ctx
// ends. An earlier stream that has not declared its keys within bound
// (counted from the first time Await finds one) is passed over, by this
// Await and every later one until it declares: skipped says that one was
// (the request it carries, if it ever arrives, may then act on key after
// this one). waited says whether Await had to wait at all.
func (o *StreamOrder) Await(ctx context.Context, key any, bound time.Duration) (waited, skipped bool) {
	if o == nil {
		return false, false
	}
	return o.seq.await(ctx, o.n, key, bound)
}

// slotState is where an accepted stream is in its ordering.
type slotState uint8

const (
	slotOpen     slotState = iota // accepted; its keys are not known yet
	slotDeclared                  // its keys are known; some are not done
	slotReleased                  // nothing to wait for
)

type orderSlot struct {
	state  slotState
	passed bool  // slotOpen: an Await's bound ran out on it; no one waits for it
	keys   []any // slotDeclared: the keys not yet done
}

// streamSeq orders one connection's streams. The accept loop numbers them
// (accept), in the order quic-go accepts them.
type streamSeq struct {
	mu sync.Mutex
	// Invariant: every stream below base is released; slots[head+i] is
	// stream base+i; base+len(slots)-head streams have been accepted.
	base  uint64
	head  int
	slots []orderSlot
	// changed is closed, and cleared, at the next change of a slot; a
	// waiter makes it.
	changed chan struct{}
	waiting atomic.Int32 // Awaits blocked, for tests
}

// accept numbers the connection's next stream.
func (s *streamSeq) accept() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.slots) { // all released: reuse the array from its start
		s.slots, s.head = s.slots[:0], 0
	} else if s.head > 64 && s.head > len(s.slots)/2 {
		s.slots = s.slots[:copy(s.slots, s.slots[s.head:])]
		s.head = 0
	}
	s.slots = append(s.slots, orderSlot{})
	return s.base + uint64(len(s.slots)-s.head) - 1
}

// slotLocked returns stream n's slot, or nil once it is released. mu held.
func (s *streamSeq) slotLocked(n uint64) *orderSlot {
	if n < s.base {
		return nil
	}
	sl := &s.slots[s.head+int(n-s.base)]
	if sl.state == slotReleased {
		return nil
	}
	return sl
}

func (s *streamSeq) declare(n uint64, keys []any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slotLocked(n)
	if sl == nil || sl.state != slotOpen {
		return
	}
	if len(keys) == 0 {
		s.releaseLocked(n)
		return
	}
	sl.state, sl.keys = slotDeclared, append([]any(nil), keys...)
	s.changedLocked()
}

func (s *streamSeq) done(n uint64, key any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := s.slotLocked(n)
	if sl == nil || sl.state != slotDeclared {
		return
	}
	for i, k := range sl.keys {
		if k == key {
			sl.keys = append(sl.keys[:i], sl.keys[i+1:]...)
			break
		}
	}
	if len(sl.keys) == 0 {
		s.releaseLocked(n)
		return
	}
	s.changedLocked()
}

func (s *streamSeq) release(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(n)
}

func (s *streamSeq) releaseLocked(n uint64) {
	sl := s.slotLocked(n)
	if sl == nil {
		return
	}
	*sl = orderSlot{state: slotReleased}
	for s.head < len(s.slots) && s.slots[s.head].state == slotReleased {
		s.head++
		s.base++
	}
	s.changedLocked()
}

func (s *streamSeq) changedLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// earlierLocked reports whether a stream before n holds key (held),
// whether one has not declared its keys yet (open), and whether one that
// has not is passed over (passed). mu held.
func (s *streamSeq) earlierLocked(n uint64, key any) (held, open, passed bool) {
	for m := s.base; m < n; m++ {
		sl := &s.slots[s.head+int(m-s.base)]
		switch {
		case sl.state == slotOpen && sl.passed:
			passed = true
		case sl.state == slotOpen:
			open = true
		case sl.state == slotDeclared:
			for _, k := range sl.keys {
				if k == key {
					return true, open, passed
				}
			}
		}
	}
	return false, open, passed
}

// passOver marks the streams before n that have not declared their keys
// as passed over: no Await waits for them any more (until they declare).
func (s *streamSeq) passOver(n uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m := s.base; m < n; m++ {
		if sl := &s.slots[s.head+int(m-s.base)]; sl.state == slotOpen {
			sl.passed = true
		}
	}
	s.changedLocked()
}

func (s *streamSeq) await(ctx context.Context, n uint64, key any, bound time.Duration) (waited, skipped bool) {
	var expired <-chan time.Time // the bound, running once a stream not yet read is found
	for {
		s.mu.Lock()
		held, open, passed := s.earlierLocked(n, key)
		if !held && !open {
			s.mu.Unlock()
			return waited, passed
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		waited = true
		if open && expired == nil {
			timer := time.NewTimer(bound)
			defer timer.Stop()
			expired = timer.C
		}
		s.waiting.Add(1)
		select {
		case <-ch:
		case <-expired:
			s.passOver(n)
		case <-ctx.Done():
		}
		s.waiting.Add(-1)
		if ctx.Err() != nil {
			return waited, false
		}
	}
}
