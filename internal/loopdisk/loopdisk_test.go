package loopdisk

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mustNew mounts a 16 MiB ext4 disk at a fresh mount point, closed at the
// test's end; it skips the test where that cannot be done.
func mustNew(tb testing.TB) *Disk {
	tb.Helper()
	if err := FreezeAvailable(); err != nil {
		tb.Skip(err)
	}
	dir := tb.TempDir()
	d, err := New(context.Background(), dir, filepath.Join(dir, "node1", "data"), 16)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { d.Close() })
	return d
}

// writeSync writes and fsyncs a file on the disk (through Path) and
// reports the outcome on the channel it returns.
func writeSync(d *Disk, name string) <-chan error {
	done := make(chan error, 1)
	go func() {
		f, err := os.Create(d.Path(filepath.Join(d.MountPoint(), name)))
		if err == nil {
			_, err = f.Write([]byte("payment"))
			err = errors.Join(err, f.Sync(), f.Close())
		}
		done <- err
	}()
	return done
}

// TestFreezeBlocksWritesUntilThaw: a write and fsync to a frozen disk
// does not complete while it is frozen, and completes once thawed; a
// second Freeze of a frozen disk is refused, and a Thaw of a thawed one
// is a no-op.
func TestFreezeBlocksWritesUntilThaw(t *testing.T) {
	d := mustNew(t)
	if err := <-writeSync(d, "before"); err != nil {
		t.Fatalf("write before the freeze: %v", err)
	}
	if err := d.Freeze(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !d.Frozen() {
		t.Fatal("Frozen() false after Freeze")
	}
	if err := d.Freeze(t.Context()); err == nil || !strings.Contains(err.Error(), "frozen already") {
		t.Fatalf("second freeze: %v", err)
	}
	done := writeSync(d, "during")
	// A negative: the write must still be blocked a while after the freeze.
	select {
	case err := <-done:
		t.Fatalf("write to a frozen disk completed (%v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := d.Thaw(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write after the thaw: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("write still blocked 10s after the thaw")
	}
	if d.Frozen() {
		t.Fatal("Frozen() true after Thaw")
	}
	if err := d.Thaw(); err != nil {
		t.Fatalf("thaw of a thawed disk: %v", err)
	}
}

// TestCloseThawsAndDetaches: Close of a frozen disk thaws it (a blocked
// writer completes), unmounts it and detaches its loop device, within a
// bound.
func TestCloseThawsAndDetaches(t *testing.T) {
	d := mustNew(t)
	if err := d.Freeze(t.Context()); err != nil {
		t.Fatal(err)
	}
	done := writeSync(d, "during")
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close of a frozen disk did not return in 30s")
	}
	select {
	case <-done: // the write completes or fails with the unmount; either way it is not stuck
	case <-time.After(10 * time.Second):
		t.Fatal("writer still blocked 10s after Close")
	}
	out, err := exec.Command("losetup", "-j", d.Image()).Output()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("loop device still attached after Close: %q %v", out, err)
	}
	if err := d.Freeze(t.Context()); err == nil {
		t.Fatal("Freeze after Close succeeded")
	}
}

// TestTmpfsCannotFreeze: Freeze of a tmpfs says so instead of running
// fsfreeze.
func TestTmpfsCannotFreeze(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	d, err := NewTmpfs(filepath.Join(t.TempDir(), "node1", "data"), 8)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Freeze(t.Context()); !errors.Is(err, ErrTmpfs) {
		t.Fatalf("freeze of a tmpfs: %v", err)
	}
}
