// Package loopdisk puts a directory on a small file system of its own: an
// ext4 image on a loop device (or a tmpfs), mounted in a private mount
// namespace held by a sleeping "holder" process. Processes run inside that
// namespace (Wrap: nsenter), so the mount is invisible to the rest of the
// machine and goes away with the holder even when the caller is killed
// (the holder has Pdeathsig; mount -o loop sets the loop device up with
// autoclear). The caller reaches the file system through
// /proc/<holder>/root (Path).
//
// A Disk can be frozen (Freeze: fsfreeze -f, FIFREEZE): the kernel then
// blocks every write to it, fsync and msync included, until Thaw — a disk
// that hangs rather than fails. A frozen file system must be thawed before
// anything waits on a process blocked on it (a SIGKILLed one exits only
// after the thaw) and before it is unmounted (which would hang): Close
// thaws first.
//
// Lifecycle: New or NewTmpfs mounts; Close thaws, kills the holder (which
// unmounts) and waits for the loop device to be detached. Everything
// needs root and mkfs.ext4, mount, losetup and nsenter (Available), and
// fsfreeze to freeze (FreezeAvailable).
package loopdisk

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
	"sync"
	"syscall"
	"time"
)

// Disk is a mounted small file system. Its methods are safe for concurrent use.
type Disk struct {
	img    string // the image file (host path); "" for a tmpfs
	mnt    string // the mount point (host path)
	holder *exec.Cmd
	pid    int

	mu struct {
		sync.Mutex
		frozen    bool
		closed    bool
		throttled string // the device number ThrottleWrites limited ("": none)
	}
}

// Available reports why a loop-mounted disk cannot be made here (nil: it can).
func Available() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("loopdisk: needs root to mount a file system (running as uid %d)", os.Geteuid())
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "nsenter", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("loopdisk: needs %s in PATH: %w", tool, err)
		}
	}
	return nil
}

// FreezeAvailable is Available, and fsfreeze in PATH.
func FreezeAvailable() error {
	if err := Available(); err != nil {
		return err
	}
	if _, err := exec.LookPath("fsfreeze"); err != nil {
		return fmt.Errorf("loopdisk: needs fsfreeze in PATH: %w", err)
	}
	return nil
}

// New makes an ext4 image of sizeMiB in imgDir (named after the mount
// point's parent directory) and mounts it at mountPoint (created if
// missing) in a new mount namespace.
func New(ctx context.Context, imgDir, mountPoint string, sizeMiB int) (*Disk, error) {
	img := filepath.Join(imgDir, filepath.Base(filepath.Dir(mountPoint))+".ext4")
	f, err := os.Create(img)
	if err != nil {
		return nil, fmt.Errorf("loopdisk: %w", err)
	}
	err = f.Truncate(int64(sizeMiB) << 20)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("loopdisk: %w", err)
	}
	// -m 0: no blocks reserved for root (the processes run as root here
	// and would otherwise fill them too); 4 KiB blocks as in production.
	if out, err := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-b", "4096", img).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("loopdisk: mkfs.ext4 %s: %v: %s", img, err, strings.TrimSpace(string(out)))
	}
	d, err := start(img, mountPoint, `mount -o loop "$1" "$2"`)
	if err != nil {
		return nil, err
	}
	// A write limit a killed process left on the loop device (it never
	// reached Close) would slow this disk.
	if err := d.ThrottleWrites(0); err != nil && !errors.Is(err, ErrNoThrottle) {
		return nil, errors.Join(err, d.Close())
	}
	return d, nil
}

// NewTmpfs mounts a tmpfs of sizeMiB at mountPoint in a new mount
// namespace. Like ext4 it refuses a write with ENOSPC when full; unlike
// it, a read through a mapping of a hole on a full tmpfs is SIGBUS, and
// it cannot be frozen.
func NewTmpfs(mountPoint string, sizeMiB int) (*Disk, error) {
	return start("", mountPoint, fmt.Sprintf(`mount -t tmpfs -o size=%dm tmpfs "$2"`, sizeMiB))
}

// start runs the mount command (sh, with $1 the image and $2 the mount
// point) in a new mount namespace held by a sleeping process.
func start(img, mnt, mount string) (*Disk, error) {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return nil, fmt.Errorf("loopdisk: %w", err)
	}
	cmd := exec.Command("sh", "-c", mount+` && echo mounted && exec sleep 1000000`, "sh", img, mnt)
	// Go makes / private (recursively) in the new namespace, so the mount
	// does not propagate back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("loopdisk: %w", err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("loopdisk: mount namespace holder: %w", err)
	}
	d := &Disk{img: img, mnt: mnt, holder: cmd, pid: cmd.Process.Pid}
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "mounted" {
		d.Close()
		return nil, fmt.Errorf("loopdisk: mounting %q at %s in a new mount namespace: %q %v", img, mnt, line, err)
	}
	return d, nil
}

// Image is the image file's path, "" for a tmpfs.
func (d *Disk) Image() string { return d.img }

// MountPoint is where the file system is mounted (inside the namespace).
func (d *Disk) MountPoint() string { return d.mnt }

// Wrap returns argv run inside the disk's mount namespace.
func (d *Disk) Wrap(argv []string) []string {
	return append([]string{"nsenter", "-t", strconv.Itoa(d.pid), "-m", "--"}, argv...)
}

// Path is p (a path inside the namespace, e.g. under the mount point) as
// seen from outside it, through the holder's /proc/<pid>/root.
func (d *Disk) Path(p string) string {
	return filepath.Join("/proc", strconv.Itoa(d.pid), "root", p)
}

// Avail is the file system's free space in bytes (no blocks are reserved:
// mkfs -m 0).
func (d *Disk) Avail() (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Path(d.mnt), &st); err != nil {
		return 0, fmt.Errorf("loopdisk: statfs %s: %w", d.mnt, err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// ErrTmpfs: a tmpfs cannot be frozen.
var ErrTmpfs = errors.New("loopdisk: fsfreeze needs a block-device file system; tmpfs cannot be frozen")

// freezeTimeout bounds fsfreeze -f, which first writes every dirty page
// back (a few seconds at most on these small disks).
const freezeTimeout = 30 * time.Second

// Freeze freezes the file system (fsfreeze -f in the holder's mount
// namespace): every later write, fsync and msync to it blocks until Thaw.
// Freezing a frozen disk is an error. The caller owes a Thaw (or Close).
func (d *Disk) Freeze(ctx context.Context) error {
	if d.img == "" {
		return ErrTmpfs
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.mu.closed:
		return errors.New("loopdisk: freeze: closed")
	case d.mu.frozen:
		return fmt.Errorf("loopdisk: %s is frozen already", d.mnt)
	}
	ctx, cancel := context.WithTimeout(ctx, freezeTimeout)
	defer cancel()
	// Marked frozen before the command: one killed by ctx may still have
	// frozen the file system, and Thaw then undoes it.
	d.mu.frozen = true
	if out, err := exec.CommandContext(ctx, "nsenter", d.nsArgs("fsfreeze", "-f", d.mnt)...).CombinedOutput(); err != nil {
		return errors.Join(fmt.Errorf("loopdisk: fsfreeze -f %s: %v: %s", d.mnt, err, strings.TrimSpace(string(out))), d.thawLocked())
	}
	return nil
}

// Frozen reports whether the disk was frozen and not thawed since.
func (d *Disk) Frozen() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.frozen
}

// Thaw unfreezes the file system. Thawing a disk that is not frozen is a
// no-op, and so is one fsfreeze says is not frozen (EINVAL).
func (d *Disk) Thaw() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.mu.frozen || d.mu.closed {
		return nil
	}
	return d.thawLocked()
}

// thawTimeout bounds fsfreeze -u (immediate).
const thawTimeout = 10 * time.Second

func (d *Disk) thawLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), thawTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", d.nsArgs("fsfreeze", "-u", d.mnt)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C") // the EINVAL message is matched below
	out, err := cmd.CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Invalid argument") {
		return fmt.Errorf("loopdisk: fsfreeze -u %s: %v: %s", d.mnt, err, strings.TrimSpace(string(out)))
	}
	d.mu.frozen = false
	return nil
}

func (d *Disk) nsArgs(argv ...string) []string {
	return append([]string{"-t", strconv.Itoa(d.pid), "-m", "--"}, argv...)
}

// detachTimeout bounds Close's wait for autoclear to detach the loop device.
const detachTimeout = 5 * time.Second

// Close thaws the file system if frozen, ends the namespace (unmounting
// it) and waits for the loop device to be detached, detaching it if
// autoclear did not. It is idempotent.
func (d *Disk) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.closed {
		return nil
	}
	var errs []error
	if d.mu.frozen {
		errs = append(errs, d.thawLocked())
	}
	errs = append(errs, d.unthrottleLocked())
	d.mu.closed = true
	_ = d.holder.Process.Kill()
	_ = d.holder.Wait()
	if d.img == "" {
		return errors.Join(errs...) // tmpfs: nothing outlives the namespace
	}
	deadline := time.Now().Add(detachTimeout)
	for {
		out, _ := exec.Command("losetup", "-j", d.img).Output()
		devs := strings.TrimSpace(string(out))
		if devs == "" {
			return errors.Join(errs...)
		}
		if time.Now().After(deadline) {
			for _, l := range strings.Split(devs, "\n") {
				if dev, _, ok := strings.Cut(l, ":"); ok {
					_ = exec.Command("losetup", "-d", dev).Run()
				}
			}
			return errors.Join(errs...)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
