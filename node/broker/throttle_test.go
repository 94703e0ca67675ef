package broker

import (
	"testing"
	"time"
)

// The bucket starts with a second's worth, lets a fetch overdraw it, then
// holds throttled partitions back until the deficit is paid at the rate;
// it never saves more than a second's worth. A nil throttle never waits.
func TestCopyThrottle(t *testing.T) {
	if newCopyThrottle(0) != nil || newCopyThrottle(-1) != nil {
		t.Fatal("a throttle for an unlimited rate")
	}
	var none *copyThrottle
	none.charge(1<<30, time.Now())
	if none.wait(time.Now()) != 0 {
		t.Fatal("nil throttle waits")
	}
	now := time.Unix(100, 0)
	th := newCopyThrottle(1000)
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
