package node

import "time"

// A backoff after a relapse, shared by a full disk (diskresume.go) and a
// stalled one (diskstall_holddown.go).
//
// A disk that fails again soon after the node came back (fills again, or
// stalls again) makes the node step aside and return again and again:
// every return takes followers and preferred leaderships back, and every
// relapse stops those partitions' acks=all writes until the controller has
// moved them. So a failure that comes within relapseWindow of the end of
// the previous one keeps the node aside at least backoffMin, doubling at
// every further relapse up to backoffMax; the first failure in a window
// costs nothing more, and a disk that holds for relapseWindow starts
// afresh.
//
// relapseBackoff is that rule as a pure state machine: the caller passes
// the time.
type relapseBackoff struct {
	// Invariant: backoff == 0 || backoffMin <= backoff <= backoffMax.
	backoff time.Duration // the wait imposed at the last failure; 0: none
	lastEnd time.Time     // when the last failure ended (the node resumed); zero: never
}

const (
	relapseWindow = 10 * time.Minute
	backoffMin    = 30 * time.Second
	backoffMax    = 10 * time.Minute
)

// failed records a failure at now and returns the wait it imposes: none
// for the first in relapseWindow, then backoffMin doubling up to
// backoffMax.
func (b *relapseBackoff) failed(now time.Time) time.Duration {
	if b.relapse(now) {
		b.backoff = min(max(2*b.backoff, backoffMin), backoffMax)
	} else {
		b.backoff = 0
	}
	return b.backoff
}

// relapse reports whether a failure at now would come within
// relapseWindow of the end of the last one.
func (b *relapseBackoff) relapse(now time.Time) bool {
	return !b.lastEnd.IsZero() && now.Sub(b.lastEnd) < relapseWindow
}

// ended records that the failure ended at now.
func (b *relapseBackoff) ended(now time.Time) { b.lastEnd = now }
