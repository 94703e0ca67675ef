package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// smallDisk is a small ext4 file system on a loop device, mounted at a
// node's data directory in a private mount namespace held by a "holder"
// process (sleep). The node runs inside that namespace (nsenter), so the
// mount is invisible to the rest of the machine and disappears with the
// holder even when the test binary is killed (the holder has Pdeathsig; the
// loop device is set up with autoclear by mount -o loop). The test reaches
// the file system through /proc/<holder>/root.
type smallDisk struct {
	img    string // the image file (host path)
	mnt    string // mount point = the node's --data-dir (host path)
	holder *exec.Cmd
	filler []string // files fill made, removed by free
}

// requireDiskTools skips the test unless it runs as root with the tools
// a small loop-mounted file system needs.
func requireDiskTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a small ext4 file system (loop device, private mount namespace)")
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "nsenter", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s in PATH: %v", tool, err)
		}
	}
}

// newSmallDisk makes an ext4 image of sizeMiB in dir and mounts it at mnt
// in a new mount namespace. Cleanup kills the holder and waits for the loop
// device to be released.
//
// With fsType "tmpfs" (or PAYMENTLOG_E2E_DISK=tmpfs) the file system is a
// tmpfs of that size instead (no image, no loop device). Both refuse a
// write with ENOSPC (ext4 reserves blocks at write time); they differ on a
// read through a mapping of a hole, which on a full tmpfs is SIGBUS.
func newSmallDisk(t *testing.T, dir, mnt string, sizeMiB int, fsType string) *smallDisk {
	t.Helper()
	d := &smallDisk{img: filepath.Join(dir, filepath.Base(filepath.Dir(mnt))+".ext4"), mnt: mnt}
	mount := `mount -o loop "$1" "$2"`
	if fsType == "tmpfs" || os.Getenv("PAYMENTLOG_E2E_DISK") == "tmpfs" {
		d.img = ""
		mount = fmt.Sprintf(`mount -t tmpfs -o size=%dm tmpfs "$2"`, sizeMiB)
		d.startHolder(t, mount)
		return d
	}
	f, err := os.Create(d.img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(sizeMiB) << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// -m 0: no blocks reserved for root (the node runs as root here and
	// would otherwise fill them too); 4 KiB blocks as in production.
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-b", "4096", d.img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v: %s", err, out)
	}
	d.startHolder(t, mount)
	return d
}

// startHolder runs the mount command (sh, with $1 the image and $2 the
// mount point) in a new mount namespace held by a sleeping process.
func (d *smallDisk) startHolder(t *testing.T, mount string) {
	t.Helper()
	if err := os.MkdirAll(d.mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", mount+` && echo mounted && exec sleep 3600`, "sh", d.img, d.mnt)
	// Go makes / private (recursively) in the new namespace, so the mount
	// does not propagate back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("mount namespace holder: %v", err)
	}
	d.holder = cmd
	t.Cleanup(d.close)
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "mounted" {
		t.Fatalf("mounting %s at %s in a new mount namespace: %q %v", d.img, d.mnt, line, err)
	}
}

// close ends the namespace (unmounting the file system) and waits for the
// loop device to be detached, detaching it if autoclear did not.
func (d *smallDisk) close() {
	if d.holder == nil {
		return
	}
	_ = d.holder.Process.Kill()
	_ = d.holder.Wait()
	d.holder = nil
	if d.img == "" {
		return // tmpfs: nothing outlives the namespace
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, _ := exec.Command("losetup", "-j", d.img).Output()
		devs := strings.TrimSpace(string(out))
		if devs == "" {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range strings.Split(devs, "\n") {
				if dev, _, ok := strings.Cut(l, ":"); ok {
					_ = exec.Command("losetup", "-d", dev).Run()
				}
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// wrap returns argv run inside the disk's mount namespace.
func (d *smallDisk) wrap(argv []string) []string {
	return append([]string{"nsenter", "-t", strconv.Itoa(d.holder.Process.Pid), "-m", "--"}, argv...)
}

// path is p (a host path under the mount point) as seen through the
// holder's mount namespace.
func (d *smallDisk) path(p string) string {
	return filepath.Join("/proc", strconv.Itoa(d.holder.Process.Pid), "root", p)
}

// avail is the file system's free space (no blocks are reserved: mkfs -m 0).
func (d *smallDisk) avail(t *testing.T) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.path(d.mnt), &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// fill allocates every free block of the file system to filler files.
func (d *smallDisk) fill(t *testing.T) {
	t.Helper()
	name := d.path(filepath.Join(d.mnt, fmt.Sprintf("filler-%d", len(d.filler))))
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
	t.Logf("disk of %s full: %d bytes of filler, %d bytes free", d.mnt, off, d.avail(t))
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
	t.Logf("disk of %s freed: %d bytes free", d.mnt, d.avail(t))
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
