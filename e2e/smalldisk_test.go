package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"paymentlog/internal/loopdisk"
)

// smallDisk is a small file system (loopdisk: ext4 on a loop device, or
// a tmpfs) mounted at a node's data directory in a private mount
// namespace; the node runs inside it (Wrap). The test reaches the file
// system through Path and fills it with filler files.
type smallDisk struct {
	*loopdisk.Disk
	filler []string // files fill made, removed by free
}

// requireDiskTools skips the test unless it runs as root with the tools
// a small loop-mounted file system needs.
func requireDiskTools(t *testing.T) {
	t.Helper()
	if err := loopdisk.Available(); err != nil {
		t.Skip(err)
	}
}

// newSmallDisk makes an ext4 image of sizeMiB in dir and mounts it at mnt
// in a new mount namespace. Cleanup closes it (thawing it first if it is
// frozen) and waits for the loop device to be released.
//
// With fsType "tmpfs" (or PAYMENTLOG_E2E_DISK=tmpfs) the file system is a
// tmpfs of that size instead (no image, no loop device). Both refuse a
// write with ENOSPC (ext4 reserves blocks at write time); they differ on a
// read through a mapping of a hole, which on a full tmpfs is SIGBUS.
func newSmallDisk(t *testing.T, dir, mnt string, sizeMiB int, fsType string) *smallDisk {
	t.Helper()
	var d *loopdisk.Disk
	var err error
	if fsType == "tmpfs" || os.Getenv("PAYMENTLOG_E2E_DISK") == "tmpfs" {
		d, err = loopdisk.NewTmpfs(mnt, sizeMiB)
	} else {
		d, err = loopdisk.New(context.Background(), dir, mnt, sizeMiB)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Error(err)
		}
	})
	return &smallDisk{Disk: d}
}

// avail is the file system's free space (no blocks are reserved: mkfs -m 0).
func (d *smallDisk) avail(t *testing.T) int64 {
	t.Helper()
	n, err := d.Avail()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// fill allocates every free block of the file system to filler files.
func (d *smallDisk) fill(t *testing.T) {
	t.Helper()
	name := d.Path(filepath.Join(d.MountPoint(), fmt.Sprintf("filler-%d", len(d.filler))))
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d.filler = append(d.filler, name)
	var off int64
	for chunk := d.avail(t) + 1<<20; chunk >= 4096; {
		err := syscall.Fallocate(int(f.Fd()), 0, off, chunk)
		switch {
		case err == nil:
			off += chunk
		case errors.Is(err, syscall.ENOSPC):
			chunk /= 2
		default:
			t.Fatalf("fallocate %s: %v", name, err)
		}
	}
	t.Logf("disk of %s full: %d bytes of filler, %d bytes free", d.MountPoint(), off, d.avail(t))
}

// free removes the filler files.
func (d *smallDisk) free(t *testing.T) {
	t.Helper()
	for _, name := range d.filler {
		if err := os.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	d.filler = nil
	t.Logf("disk of %s freed: %d bytes free", d.MountPoint(), d.avail(t))
}

// waitFor polls cond every 20ms until it holds or the deadline passes.
func waitFor(ctx context.Context, t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	last := ""
	for {
		ok, why := cond()
		if ok {
			return
		}
		last = why
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s: %s", d, what, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// release frees n bytes of the newest filler file (its tail), as when
// something else on the disk frees a little room.
func (d *smallDisk) release(t *testing.T, n int64) {
	t.Helper()
	if len(d.filler) == 0 {
		t.Fatal("release: the disk was not filled")
	}
	name := d.filler[len(d.filler)-1]
	fi, err := os.Stat(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(name, max(fi.Size()-n, 0)); err != nil {
		t.Fatal(err)
	}
}
