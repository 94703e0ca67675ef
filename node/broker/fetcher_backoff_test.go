package broker

import (
	"testing"
	"time"
)

func TestBehindBackoff(t *testing.T) {
	for n, want := range []time.Duration{1, 2, 4, 8, 16, 32, 50, 50} {
		if got := behindBackoff(n); got != want*time.Millisecond {
			t.Errorf("behindBackoff(%d) = %v, want %v ms", n, got, want)
		}
	}
	if got := behindBackoff(1000); got != fetchErrorBackoff {
		t.Errorf("behindBackoff(1000) = %v", got)
	}
}

// A partition detached from a fetcher leaves none of its per-partition state
// behind; a partition still attached keeps it.
func TestFetcherForgetsDetachedPartitions(t *testing.T) {
	gone, kept := tp{"t", 0}, tp{"t", 1}
	f := &fetcher{b: &Broker{},
		errUntil:     map[tp]time.Time{gone: time.Now().Add(time.Hour), kept: time.Now().Add(time.Hour)},
		behind:       map[tp]int{gone: 3, kept: 2},
		failedLogged: map[tp]bool{gone: true, kept: true},
	}
	f.mu.parts = map[tp]*partition{kept: {key: kept}}
	f.mu.Lock()
	f.forgetDetachedLocked()
	f.mu.Unlock()
	if _, ok := f.errUntil[gone]; ok || len(f.errUntil) != 1 {
		t.Errorf("errUntil = %v, want only %v", f.errUntil, kept)
	}
	if _, ok := f.behind[gone]; ok || f.behind[kept] != 2 {
		t.Errorf("behind = %v, want only %v: 2", f.behind, kept)
	}
	if f.failedLogged[gone] || !f.failedLogged[kept] {
		t.Errorf("failedLogged = %v, want only %v", f.failedLogged, kept)
	}
}
