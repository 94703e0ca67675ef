package broker

import (
	"sync"
	"time"
)

// byteThrottle is a token bucket of rate bytes per second, holding at most
// one second's worth. A user may take the bucket below zero (charge: what
// it did is not cut to fit) and then sits out until it has refilled
// (wait), so over any span it stays within rate plus one step's bytes.
//
// It limits how fast this node copies partitions it is being added to by
// a reassignment (Kafka's follower replication throttle; b.throttle): only
// replicas being added and not yet in the ISR are throttled, since an ISR
// member holds back the HW of acks=all writes if it stops fetching. And
// it limits the log cleaner's reads and writes (b.cleanerThrottle,
// cleaner.go).
//
// The rate may change at any time (setRate: the cluster's
// reassignment.throttle.bytes, applied without a restart); 0 is
// unlimited.
type byteThrottle struct {
	mu   sync.Mutex
	rate int64 // bytes per second; <= 0: unlimited
	// tokens is in bytes; last is when it was last brought up to date.
	tokens float64
	last   time.Time
}

func newByteThrottle(rate int64) *byteThrottle {
	t := &byteThrottle{}
	t.setRate(rate, time.Time{})
	return t
}

// setRate changes the rate. From or to unlimited the bucket starts full;
// otherwise it keeps what it holds, at most a second's worth of the new
// rate (a debt stays, to be paid at the new rate). It returns the rate
// before.
func (t *byteThrottle) setRate(rate int64, now time.Time) (old int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rate, old = max(rate, 0), t.rate
	if rate == old {
		return old
	}
	if t.rate == 0 || rate == 0 {
		t.tokens, t.last = float64(rate), now
	} else {
		t.refill(now)
		t.tokens = min(t.tokens, float64(rate))
	}
	t.rate = rate
	return old
}

// limit returns the rate (0: unlimited).
func (t *byteThrottle) limit() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rate
}

// refill brings tokens up to now; callers hold mu and the rate is > 0.
func (t *byteThrottle) refill(now time.Time) {
	if !t.last.IsZero() && now.After(t.last) {
		t.tokens = min(t.tokens+now.Sub(t.last).Seconds()*float64(t.rate), float64(t.rate))
	}
	if t.last.IsZero() || now.After(t.last) {
		t.last = now
	}
}

// wait is how long throttled partitions must sit out before fetching again
// (0: they may fetch now). An unlimited throttle never waits.
func (t *byteThrottle) wait(now time.Time) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 {
		return 0
	}
	t.refill(now)
	if t.tokens >= 0 {
		return 0
	}
	return time.Duration(-t.tokens / float64(t.rate) * float64(time.Second))
}

// charge takes n copied bytes from the bucket.
func (t *byteThrottle) charge(n int, now time.Time) {
	if n <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.rate <= 0 {
		return
	}
	t.refill(now)
	t.tokens -= float64(n)
}

// SetReassignmentThrottle sets the rate, in bytes per second, at which this
// node copies partitions it is being added to by a reassignment (0:
// unlimited). It takes effect at once, for copies under way too.
func (b *Broker) SetReassignmentThrottle(rate int64) {
	if old := b.throttle.setRate(rate, time.Now()); old != max(rate, 0) {
		b.log.Info("reassignment throttle changed", "bytes_per_sec", max(rate, 0), "was", old)
	}
}
