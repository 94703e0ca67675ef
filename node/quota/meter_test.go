package quota

import (
	"testing"
	"time"
)

// clock is an injected clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time      { return c.t }
func (c *clock) add(d time.Duration) { c.t = c.t.Add(d) }
func limits(m map[string]int64) Limit {
	return func(principal, key string) (int64, bool) {
		r, ok := m[principal+"/"+key]
		return r, ok
	}
}

func TestMeterThrottlesAtTheRate(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	m := New(limits(map[string]int64{"User:a/p": 1000}), c.now)
	// A second's worth at once is free.
	if w := m.Wait("User:a", "p"); w != 0 {
		t.Fatalf("first wait %v", w)
	}
	m.Record("User:a", "p", 1000)
	if w := m.Wait("User:a", "p"); w != 0 {
		t.Fatalf("wait after the burst %v, want 0", w)
	}
	// 500 bytes more: half a second of debt, which Record returns too.
	if w := m.Record("User:a", "p", 500); w != 500*time.Millisecond {
		t.Fatalf("Record's wait %v, want 500ms", w)
	}
	if w := m.Wait("User:a", "p"); w != 500*time.Millisecond {
		t.Fatalf("wait %v, want 500ms", w)
	}
	c.add(200 * time.Millisecond)
	if w := m.Wait("User:a", "p"); w != 300*time.Millisecond {
		t.Fatalf("wait after 200ms %v, want 300ms", w)
	}
	c.add(300 * time.Millisecond)
	if w := m.Wait("User:a", "p"); w != 0 {
		t.Fatalf("wait once paid %v", w)
	}
	// Over a long run the meter lets through the rate: a sender that
	// waits as told moves 1000 bytes a second.
	sent := int64(0)
	start := c.t
	for c.t.Sub(start) < 20*time.Second {
		c.add(m.Wait("User:a", "p"))
		m.Record("User:a", "p", 100)
		sent += 100
		c.add(time.Millisecond)
	}
	if rate := float64(sent) / c.t.Sub(start).Seconds(); rate < 950 || rate > 1100 {
		t.Fatalf("rate %.0f bytes/s, want about 1000", rate)
	}
	// Another key, another principal, and no quota are not throttled.
	if w := m.Wait("User:a", "c"); w != 0 {
		t.Fatalf("no quota for c: %v", w)
	}
	if w := m.Wait("User:b", "p"); w != 0 {
		t.Fatalf("no quota for b: %v", w)
	}
}

func TestMeterBoundsWaitAndDebt(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	m := New(limits(map[string]int64{"User:a/p": 1000}), c.now)
	m.Record("User:a", "p", 1_000_000) // 1000 s at the rate
	if w := m.Wait("User:a", "p"); w != MaxThrottle {
		t.Fatalf("wait %v, want MaxThrottle", w)
	}
	// The debt is capped at MaxDebt: 10 s later it is paid.
	c.add(MaxDebt)
	if w := m.Wait("User:a", "p"); w != 0 {
		t.Fatalf("wait after MaxDebt %v, want 0", w)
	}
}

func TestMeterDropsIdleBuckets(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	m := New(limits(map[string]int64{"User:a/p": 1000, "User:b/p": 1000}), c.now)
	m.Record("User:a", "p", 10)
	c.add(idleAfter + 2*time.Minute)
	m.Record("User:b", "p", 10)
	if m.Len() != 1 {
		t.Fatalf("%d buckets, want the idle one dropped", m.Len())
	}
}
