package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestDiskBaseline runs the raw disk baseline briefly: both kinds of round
// measure something, and the rounds leave no file behind.
func TestDiskBaseline(t *testing.T) {
	dir := t.TempDir()
	res, err := runDisk(context.Background(), dir, 50*time.Millisecond, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 2 || len(res.LeftCachedRounds) != 2 || res.MBPerSec <= 0 || res.LeftCachedMBPerSec <= 0 {
		t.Fatalf("disk baseline: %+v", res)
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("the disk rounds left %d files in %s", len(left), dir)
	}
}
