package broker

import (
	"testing"
	"time"
)

// The bucket starts with a second's worth, lets a fetch overdraw it, then
// holds throttled partitions back until the deficit is paid at the rate;
// it never saves more than a second's worth. An unlimited throttle never
// waits.
func TestByteThrottle(t *testing.T) {
	for _, r := range []int64{0, -1} {
		none := newByteThrottle(r)
		none.charge(1<<30, time.Now())
		if none.wait(time.Now()) != 0 || none.limit() != 0 {
			t.Fatalf("rate %d: unlimited throttle waits", r)
		}
	}
	now := time.Unix(100, 0)
	th := newByteThrottle(1000)
	if w := th.wait(now); w != 0 {
		t.Fatalf("fresh bucket waits %v", w)
	}
	th.charge(1000, now) // the first second's worth
	if w := th.wait(now); w != 0 {
		t.Fatalf("empty (not negative) bucket waits %v", w)
	}
	th.charge(2500, now) // one big fetch: 2.5 s in debt
	if w := th.wait(now); w != 2500*time.Millisecond {
		t.Fatalf("wait %v, want 2.5s", w)
	}
	now = now.Add(time.Second)
	if w := th.wait(now); w != 1500*time.Millisecond {
		t.Fatalf("a second later: wait %v, want 1.5s", w)
	}
	now = now.Add(time.Hour) // idle: saves at most a second's worth
	if w := th.wait(now); w != 0 {
		t.Fatalf("after an hour: wait %v", w)
	}
	th.charge(2000, now)
	if w := th.wait(now); w != time.Second {
		t.Fatalf("after an idle hour and 2 s worth: wait %v, want 1s", w)
	}
	// A clock that steps back does not refill.
	if w := th.wait(now.Add(-time.Minute)); w != time.Second {
		t.Fatalf("clock stepped back: wait %v, want 1s", w)
	}
}

// The rate changes at run time: from unlimited the bucket starts full, a
// lower rate keeps a debt and pays it at the new rate, and back to
// unlimited nothing waits.
func TestByteThrottleRateChanges(t *testing.T) {
	now := time.Unix(100, 0)
	th := newByteThrottle(0)
	th.charge(1<<20, now) // unlimited: not counted
	th.setRate(1000, now)
	if w := th.wait(now); w != 0 || th.limit() != 1000 {
		t.Fatalf("just throttled: wait %v, limit %d", w, th.limit())
	}
	th.charge(3000, now) // 2 s in debt at 1000 B/s
	th.setRate(500, now)
	if w := th.wait(now); w != 4*time.Second {
		t.Fatalf("after halving the rate: wait %v, want 4s", w)
	}
	th.setRate(500, now.Add(time.Hour)) // the same rate: nothing changes
	th.setRate(0, now)
	if w := th.wait(now); w != 0 {
		t.Fatalf("unlimited again: wait %v", w)
	}
	th.setRate(2000, now)
	if w := th.wait(now); w != 0 {
		t.Fatalf("throttled again: a fresh bucket waits %v", w)
	}
	th.charge(2000+1000, now)
	if w := th.wait(now); w != 500*time.Millisecond {
		t.Fatalf("wait %v, want 0.5s", w)
	}
}
