package audit

import (
	"sync"
	"time"
)

// Access lines (event "access", PCI DSS 10.2.1.1: individual users' access
// to cardholder data): a client that reads (op "read", a Fetch) or writes
// ("write", a Produce) a topic is recorded the first time the node serves
// it that topic, and again once AccessInterval has passed since its last
// line, per principal, client address (host:port, so per connection) and
// topic: a consumer polling all day leaves a line an hour, not one a poll.

// DefaultAccessInterval is how often a client's continuing access to a
// topic is recorded again.
const DefaultAccessInterval = time.Hour

// maxAccessKeys bounds the accesses remembered; past it, those older than
// the interval are forgotten, and if that frees nothing, all are: lines
// are then written again sooner, never left out.
const maxAccessKeys = 1 << 16

type accessKey struct {
	principal, addr, op, topic string
}

// accessSeen remembers when each access was last written.
type accessSeen struct {
	interval time.Duration // 0: access lines are off
	mu       sync.Mutex
	last     map[accessKey]time.Time
}

// due reports whether an access at now should be written, and if so
// remembers it as written.
func (a *accessSeen) due(k accessKey, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t, ok := a.last[k]; ok && now.Sub(t) < a.interval {
		return false
	}
	if a.last == nil {
		a.last = map[accessKey]time.Time{}
	}
	makeRoom(a.last, maxAccessKeys, now, a.interval, func(t time.Time) time.Time { return t })
	a.last[k] = now
	return true
}

// SetAccessInterval sets how often a continuing access is recorded again
// (DefaultAccessInterval until set); 0 turns access lines off. Call it
// before the node serves requests.
func (l *Log) SetAccessInterval(d time.Duration) {
	if l != nil {
		l.access.interval = d
	}
}

// makeRoom keeps m, which remembers when each key was last written, below
// max entries: when it is full, the entries written window or more before
// now are forgotten, and if that frees nothing, all are (lines are then
// written again sooner, never left out uncounted).
func makeRoom[K comparable, V any](m map[K]V, max int, now time.Time, window time.Duration, written func(V) time.Time) {
	if len(m) < max {
		return
	}
	for k, v := range m {
		if now.Sub(written(v)) >= window {
			delete(m, k)
		}
	}
	if len(m) >= max {
		clear(m)
	}
}

// RecordsAccess reports whether access lines are written.
func (l *Log) RecordsAccess() bool { return l != nil && l.access.interval > 0 }

// Access records that who performed op ("read" or "write") on topic, unless
// the same access was recorded less than the interval ago.
func (l *Log) Access(who Who, op, topic string) {
	if !l.RecordsAccess() {
		return
	}
	now := l.now()
	if !l.access.due(accessKey{who.Principal, who.Addr, op, topic}, now) {
		return
	}
	ln := l.newLine(EventAccess, who, op, ResultOK, "")
	name := topic // a copy: taking topic's address would move it to the heap on every call
	ln.Resource, ln.ResourceName = ResourceTopic, &name
	l.mu.Lock()
	defer l.mu.Unlock()
	l.write(&ln)
}
