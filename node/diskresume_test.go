package node

import (
	"testing"
	"time"

	"paymentlog/segment"
)

// TestDiskResumeRule drives the resume rule with an injected clock: the
// free-space threshold, and the backoff after a relapse that doubles up to
// backoffMax and is forgotten after relapseWindow without one.
func TestDiskResumeRule(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	const gib = int64(1) << 30
	roomy := segment.Space{Total: 100 * gib, Avail: 10 * gib}
	tight := segment.Space{Total: 100 * gib, Avail: 10*gib - 1}
	r := diskResume{freePercent: 10}

	r.filled(t0) // a first filling: no backoff
	if ok, why := r.may(t0.Add(time.Second), tight, true); ok {
		t.Fatal("resumed with less than 10% free")
	} else {
		t.Logf("refused: %s", why)
	}
	if ok, _ := r.may(t0.Add(time.Second), tight, false); !ok {
		t.Fatal("refused although the space could not be measured")
	}
	if ok, why := r.may(t0.Add(time.Second), roomy, true); !ok {
		t.Fatalf("refused with 10%% free: %s", why)
	}
	r.resumed(t0.Add(time.Second))

	// Relapses within relapseWindow of resuming: 30 s, 1 min, 2 min, ...
	// up to 10 min.
	now := t0.Add(time.Minute)
	want := backoffMin
	for i := range 8 {
		r.filled(now)
		if ok, why := r.may(now.Add(want-time.Millisecond), roomy, true); ok {
			t.Fatalf("relapse %d: resumed before %v", i+1, want)
		} else if i == 0 {
			t.Logf("refused: %s", why)
		}
		if ok, why := r.may(now.Add(want), roomy, true); !ok {
			t.Fatalf("relapse %d: refused after %v: %s", i+1, want, why)
		}
		now = now.Add(want)
		r.resumed(now)
		now = now.Add(relapseWindow - time.Second)
		want = min(2*want, backoffMax)
	}
	if r.backoff != backoffMax {
		t.Fatalf("backoff %v, want the cap %v", r.backoff, backoffMax)
	}

	// A node that stayed up for relapseWindow starts afresh.
	now = now.Add(time.Second)
	r.filled(now)
	if ok, why := r.may(now, roomy, true); !ok {
		t.Fatalf("refused after %v without a relapse: %s", relapseWindow, why)
	}

	// 0 percent: resume once the probe fits, whatever statfs says.
	r0 := diskResume{}
	r0.filled(t0)
	if ok, _ := r0.may(t0, segment.Space{Total: 100 * gib, Avail: 1 << 20}, true); !ok {
		t.Fatal("freePercent 0 refused")
	}
}
