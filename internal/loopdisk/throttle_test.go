package loopdisk

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestThrottleWritesSlowsFsync: with the device's writes limited to
// 1 MiB/s, writing back 2 MiB (an fsync) takes over a second, and Close
// lifts the limit.
func TestThrottleWritesSlowsFsync(t *testing.T) {
	d := mustNew(t)
	dev, majMin, err := d.Device()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dev, "/dev/loop") {
		t.Fatalf("device %q", dev)
	}
	if err := d.ThrottleWrites(1 << 20); errors.Is(err, ErrNoThrottle) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(d.Path(filepath.Join(d.MountPoint(), "slow")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 2<<20)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second {
		t.Fatalf("fsync of 2 MiB at 1 MiB/s took %v", took)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	limits, err := os.ReadFile(blkioWriteBPS)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(limits), majMin+" ") {
		t.Fatalf("limit on %s left after Close: %q", majMin, limits)
	}
}

// TestNewLiftsALeftoverLimit: a limit left on a loop device by a process
// that never closed its disk is lifted by the next New on that device.
func TestNewLiftsALeftoverLimit(t *testing.T) {
	d := mustNew(t)
	_, majMin, err := d.Device()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(blkioWriteBPS); err != nil {
		t.Skip(ErrNoThrottle)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// As a killed process leaves it: set, never lifted.
	if err := os.WriteFile(blkioWriteBPS, []byte(majMin+" 1048576\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(blkioWriteBPS, []byte(majMin+" 0\n"), 0o644) })
	e := mustNew(t)
	if _, m, err := e.Device(); err != nil || m != majMin {
		t.Skipf("the next disk is on %s (%v), not %s", m, err, majMin)
	}
	limits, err := os.ReadFile(blkioWriteBPS)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(limits), majMin+" ") {
		t.Fatalf("the leftover limit on %s is still there: %q", majMin, limits)
	}
}
