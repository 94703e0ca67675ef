package broker

import (
	"sync"
	"time"
)

// copyThrottle limits how fast this node copies partitions it is being
// added to by a reassignment (Kafka's follower replication throttle): a
// token bucket of rate bytes per second, holding at most one second's
// worth. A fetch may take the bucket below zero (a fetch answer is not cut
// to fit); the throttled partitions then sit out until it has refilled, so
// over any span the copy stays within rate plus one fetch's bytes.
//
// Only replicas being added and not yet in the ISR are throttled: an ISR
// member holds back the HW of acks=all writes if it stops fetching.
type copyThrottle struct {
	rate int64 // bytes per second; > 0
	mu   sync.Mutex
	// tokens is in bytes; last is when it was last brought up to date.
	tokens float64
	last   time.Time
}

func newCopyThrottle(rate int64) *copyThrottle {
	if rate <= 0 {
		return nil
	}
	return &copyThrottle{rate: rate, tokens: float64(rate)}
}

// refill brings tokens up to now; callers hold mu.
func (t *copyThrottle) refill(now time.Time) {
	if !t.last.IsZero() && now.After(t.last) {
		t.tokens = min(t.tokens+now.Sub(t.last).Seconds()*float64(t.rate), float64(t.rate))
	}
	if t.last.IsZero() || now.After(t.last) {
		t.last = now
	}
}

// wait is how long throttled partitions must sit out before fetching again
// (0: they may fetch now). A nil throttle never waits.
func (t *copyThrottle) wait(now time.Time) time.Duration {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refill(now)
	if t.tokens >= 0 {
		return 0
	}
	return time.Duration(-t.tokens / float64(t.rate) * float64(time.Second))
}

// charge takes n copied bytes from the bucket.
func (t *copyThrottle) charge(n int, now time.Time) {
	if t == nil || n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refill(now)
	t.tokens -= float64(n)
}
