package audit

import "time"

// limiter is a token bucket of rate tokens a second and a burst of rate,
// which also counts what it refused since it last allowed one. Not safe for
// concurrent use (Log holds its mutex).
type limiter struct {
	rate    float64
	tokens  float64
	last    time.Time
	skipped uint64
}

// take reports whether an event at now is allowed and, if it is, how many
// were refused since the last one allowed.
func (l *limiter) take(now time.Time) (skipped uint64, ok bool) {
	if l.last.IsZero() {
		l.tokens = l.rate
	} else if d := now.Sub(l.last).Seconds(); d > 0 {
		l.tokens = min(l.rate, l.tokens+d*l.rate)
	}
	if !now.Before(l.last) {
		l.last = now
	}
	if l.tokens < 1 {
		l.skipped++
		return 0, false
	}
	l.tokens--
	skipped, l.skipped = l.skipped, 0
	return skipped, true
}
