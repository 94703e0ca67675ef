package node

import (
	"testing"
	"time"
)

// Incarnations grow with every start on a data directory, even when the
// clock steps back between two starts, and are positive.
func TestNextIncarnationGrows(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	a, err := nextIncarnation(dir, now)
	if err != nil {
		t.Fatal(err)
	}
	b, err := nextIncarnation(dir, now.Add(-time.Hour)) // the clock stepped back
	if err != nil {
		t.Fatal(err)
	}
	c, err := nextIncarnation(dir, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if a <= 0 || b <= a || c <= b {
		t.Fatalf("incarnations %d, %d, %d do not grow", a, b, c)
	}
	if c != now.Add(time.Second).UnixNano() {
		t.Fatalf("incarnation %d does not follow the clock", c)
	}
}
