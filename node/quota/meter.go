// Package quota meters each principal's bytes against its byte-rate quota
// on one node and says how long to hold its next answer back (Kafka's
// client quotas). It is a token bucket per principal and quota key, with
// an injected clock: a principal may send a second's worth of its rate at
// once, then at its rate; bytes beyond that are debt, paid off at the rate,
// and a request that arrives in debt waits until the debt is paid (at most
// MaxThrottle, and debt never exceeds MaxDebt of the rate, so a burst long
// past is forgotten as in Kafka's sampled windows).
package quota

import (
	"sync"
	"time"
)

const (
	// Burst is how much of its rate a principal may send at once.
	Burst = time.Second
	// MaxThrottle bounds one answer's delay, well below the clients'
	// request timeouts (30 s), so that a throttled request is not retried.
	MaxThrottle = 5 * time.Second
	// MaxDebt bounds what a principal owes, in time at its rate.
	MaxDebt = 10 * time.Second
	// idleAfter: a bucket untouched this long is dropped (memory bound).
	idleAfter = 10 * time.Minute
)

// Limit returns principal's quota for key in bytes per second; ok is false
// when it has none.
type Limit func(principal, key string) (rate int64, ok bool)

// Meter holds the buckets. Safe for concurrent use.
type Meter struct {
	limit Limit
	now   func() time.Time
	mu    sync.Mutex
	b     map[bucketKey]*bucket
	swept time.Time
}

type bucketKey struct{ principal, key string }

// bucket: tokens (bytes; negative is debt) as of at, for rate.
type bucket struct {
	tokens float64
	rate   int64
	at     time.Time
}

// New returns a meter of the quotas limit gives (now: time.Now when nil).
func New(limit Limit, now func() time.Time) *Meter {
	if now == nil {
		now = time.Now
	}
	return &Meter{limit: limit, now: now, b: map[bucketKey]*bucket{}}
}

// Wait returns how long a request of principal should wait before it is
// served: the time until its debt for key is paid, at most MaxThrottle; 0
// without a quota or debt.
func (m *Meter) Wait(principal, key string) time.Duration {
	rate, ok := m.limit(principal, key)
	if !ok || rate <= 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refill(principal, key, rate).wait()
}

// Record counts n bytes of principal against its quota for key and
// returns Wait's answer after them (how long its next request should wait).
func (m *Meter) Record(principal, key string, n int64) time.Duration {
	rate, ok := m.limit(principal, key)
	if !ok || rate <= 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.refill(principal, key, rate)
	if n > 0 {
		b.tokens = max(b.tokens-float64(n), -float64(rate)*MaxDebt.Seconds())
	}
	return b.wait()
}

// wait is how long until b's debt is paid, at most MaxThrottle.
func (b *bucket) wait() time.Duration {
	if b.tokens >= 0 {
		return 0
	}
	return min(time.Duration(-b.tokens/float64(b.rate)*float64(time.Second)), MaxThrottle)
}

// refill brings principal's bucket for key up to now at rate (a changed
// quota keeps the bucket, capped at the new burst) and sweeps idle buckets
// once a minute.
func (m *Meter) refill(principal, key string, rate int64) *bucket {
	now := m.now()
	k := bucketKey{principal, key}
	b := m.b[k]
	burst := float64(rate) * Burst.Seconds()
	if b == nil {
		b = &bucket{tokens: burst, rate: rate, at: now}
		m.b[k] = b
	}
	if dt := now.Sub(b.at); dt > 0 {
		b.tokens += dt.Seconds() * float64(rate)
		b.at = now
	}
	b.rate = rate
	b.tokens = min(b.tokens, burst)
	if now.Sub(m.swept) > time.Minute {
		m.swept = now
		for k, o := range m.b {
			if o != b && now.Sub(o.at) > idleAfter { // its debt (at most MaxDebt) is paid by now
				delete(m.b, k)
			}
		}
	}
	return b
}

// Len is the number of buckets held (tests).
func (m *Meter) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.b)
}
