package quic

import (
	"math/bits"
	"sync/atomic"
)

// bodyBudget bounds the bytes an endpoint allocates for frame bodies on the
// strength of their length prefixes alone, before the bytes arrive.
//
// A frame longer than its reader's buffer is read into one allocation of its
// announced length (rounded up by bodyCap) when the budget has room for it;
// the room comes back as soon as the body has arrived or the read failed.
// Without room the reader falls back to growing its buffer as bytes arrive,
// doubling from growChunk, which copies what it holds at every step: about
// one extra copy of every large body (a 600 KiB produce request grown from a
// 4 KiB buffer was copied 964 KiB over; at full load that was 7-10% of a
// node's CPU). Peers that announce large frames and send nothing can tie up
// at most the budget; everyone else's frames then take the slow path and
// still arrive.
type bodyBudget struct{ avail atomic.Int64 }

// defaultBodyBudget is an endpoint's budget: four frames of the default
// maximum size in flight at once.
const defaultBodyBudget = 4 * DefaultMaxFrameSize

func newBodyBudget(n int64) *bodyBudget {
	b := &bodyBudget{}
	b.avail.Store(n)
	return b
}

// take reserves n bytes, or reports false (taking nothing) when fewer are
// left. A nil budget has no room.
func (b *bodyBudget) take(n int) bool {
	if b == nil {
		return false
	}
	for {
		a := b.avail.Load()
		if a < int64(n) {
			return false
		}
		if b.avail.CompareAndSwap(a, a-int64(n)) {
			return true
		}
	}
}

// give returns n bytes taken before.
func (b *bodyBudget) give(n int) { b.avail.Add(int64(n)) }

// bodyCap is the capacity allocated for a body of n bytes: n rounded up to
// an eighth of its power of two (at least growChunk), so that a stream whose
// frames grow a little at a time (a follower's fetch answers) does not
// allocate anew for each one; at most limit.
func bodyCap(n, limit int) int {
	step := max(growChunk, 1<<(bits.Len(uint(n))-1)/8)
	c := (n + step - 1) / step * step
	return max(n, min(c, limit))
}
