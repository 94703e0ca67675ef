package loopdisk

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// A Disk's writes can be throttled (ThrottleWrites): the loop device then
// completes at most so many bytes of writes a second, a disk that is slow
// but works, unlike a frozen one. The limit is the block I/O controller's
// of the root cgroup (cgroup v1 blkio.throttle.write_bps_device), so it
// holds for every writer of the device, the kernel's writeback included;
// where that file is missing (cgroup v2 only) ThrottleWrites says so.

// blkioWriteBPS is cgroup v1's root write limit per device.
const blkioWriteBPS = "/sys/fs/cgroup/blkio/blkio.throttle.write_bps_device"

// ErrNoThrottle: the machine offers no root write limit per device.
var ErrNoThrottle = errors.New("loopdisk: no cgroup v1 blkio write throttle (" + blkioWriteBPS + ")")

// Device returns the loop device under the file system ("/dev/loop3")
// and its device number ("7:3", as /sys/dev/block names it).
func (d *Disk) Device() (dev, majMin string, err error) {
	if d.img == "" {
		return "", "", errors.New("loopdisk: a tmpfs has no block device")
	}
	out, err := exec.Command("losetup", "-j", d.img).Output()
	if err != nil {
		return "", "", fmt.Errorf("loopdisk: losetup -j %s: %w", d.img, err)
	}
	dev, _, ok := strings.Cut(strings.TrimSpace(string(out)), ":")
	if !ok || strings.Contains(dev, "\n") {
		return "", "", fmt.Errorf("loopdisk: losetup -j %s: want one device, got %q", d.img, out)
	}
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return "", "", fmt.Errorf("loopdisk: stat %s: %w", dev, err)
	}
	return dev, fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev)), nil
}

// ThrottleWrites limits the device's writes to bps bytes a second (0:
// no limit). Close lifts the limit.
func (d *Disk) ThrottleWrites(bps int64) error {
	if _, err := os.Stat(blkioWriteBPS); err != nil {
		return ErrNoThrottle
	}
	_, majMin, err := d.Device()
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.mu.closed {
		return errors.New("loopdisk: throttle: closed")
	}
	if err := os.WriteFile(blkioWriteBPS, []byte(fmt.Sprintf("%s %d\n", majMin, bps)), 0o644); err != nil {
		return fmt.Errorf("loopdisk: throttling %s: %w", majMin, err)
	}
	d.mu.throttled = majMin
	if bps == 0 {
		d.mu.throttled = ""
	}
	return nil
}

// unthrottleLocked lifts a write limit (d.mu held).
func (d *Disk) unthrottleLocked() error {
	if d.mu.throttled == "" {
		return nil
	}
	err := os.WriteFile(blkioWriteBPS, []byte(d.mu.throttled+" 0\n"), 0o644)
	d.mu.throttled = ""
	if err != nil {
		return fmt.Errorf("loopdisk: lifting the write limit: %w", err)
	}
	return nil
}
