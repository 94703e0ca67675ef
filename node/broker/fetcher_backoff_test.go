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
