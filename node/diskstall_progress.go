package node

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// A slow disk is not a stalled one.
//
// Under --fsync interval|never one flush (of an interval, or of a sealed
// segment) writes back seconds of records at once, and on a disk that is
// slower than the load for a while one fdatasync outlasts
// --disk-stall-timeout while the device writes all along (measured on
// loop disks throttled to 1 MB/s under 1.6 MB/s of acks=all records:
// operations of up to 7 s, five or six "stalls" per node in 30 s, every node
// stepping aside in turn and pauses of acknowledgements of 11.8 s; at
// 2 MB/s 1.75 s, at 4 MB/s 0.78 s). Stepping aside does not help a node
// that is slow rather than hung: acks under interval do not wait for the
// flush, and the fencing only moves leaderships around.
//
// So an operation in flight longer than the timeout is a stall only if
// the block device under the data directory completed no write, discard
// or cache flush during the last timeout (the counters of
// /sys/dev/block/MAJ:MIN/stat, read at every look, i.e. every heartbeat
// tick), or if it has been in flight for more than slowDiskStallFactor
// timeouts (a device that writes for others while our operation hangs).
// Reads do not count: a frozen file system still serves them. Where the
// device cannot be identified (a tmpfs, an overlay, no sysfs) any
// operation over the timeout is a stall, as before. The device is the one
// holding the data directory: a metadata log or partition directory
// mounted from another device is judged by the data directory's. A
// stall, once found, lasts until its operation returns (however the
// device writes meanwhile): a stall that ended at every write of a busy
// shared device and began again would count as relapses.

// slowDiskStallFactor: an operation in flight longer than this many
// --disk-stall-timeouts is a stall however busy the device is.
const slowDiskStallFactor = 10

// deviceProgress watches a device's counter of completed writes, a pure
// state machine: the caller passes the time and the counter.
//
// A change is dated to the look before the one that saw it, the earliest
// it can have happened: a process that did not look for a while (every
// thread blocked on a frozen file system, a GC pause) and finds the
// counter moved, by the writes of the thaw, cannot tell whether the
// device wrote during the last timeout, and must not take an operation
// older than the timeout for a slow one.
type deviceProgress struct {
	count uint64
	at    time.Time // when count changed at the latest, or was first seen
	seen  time.Time // the last look; zero: none yet
}

// observe records the counter read at now and returns how long the
// device may have completed nothing.
func (p *deviceProgress) observe(now time.Time, count uint64) time.Duration {
	switch {
	case p.seen.IsZero():
		p.count, p.at = count, now
	case count != p.count:
		p.count, p.at = count, p.seen
	}
	p.seen = now
	return max(now.Sub(p.at), 0)
}

// errBlockStat: a /sys/block stat file that does not hold the counters.
var errBlockStat = errors.New("node: malformed block device stat")

// parseBlockStat returns the completed writes, discards and cache flushes
// of a /sys/block/<dev>/stat line (Documentation/block/stat.rst: writes
// completed is the 5th field, discards the 12th and flushes the 16th,
// the last two missing on older kernels).
func parseBlockStat(b []byte) (uint64, error) {
	f := bytes.Fields(b)
	if len(f) < 11 {
		return 0, fmt.Errorf("%w: %d fields", errBlockStat, len(f))
	}
	var sum uint64
	for _, i := range []int{4, 11, 15} {
		if i >= len(f) {
			break
		}
		v, err := strconv.ParseUint(string(f[i]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: field %d: %q", errBlockStat, i+1, f[i])
		}
		sum += v
	}
	return sum, nil
}

// blockStatMax bounds a stat line: 17 counters of at most 20 digits each,
// with their padding.
const blockStatMax = 1024

// blockDeviceWrites returns a reader of parseBlockStat's counter for the
// block device holding dir, and the stat file it reads; nil when the
// device cannot be identified or its counters read.
//
// The file stays open and each look reads it at offset 0, where sysfs
// makes the line afresh: one pread per heartbeat instead of os.ReadFile's
// open, fstat, epoll registration, reads and close (about 1.5% of a node's
// CPU at full load). The file is closed when the reader is collected.
func blockDeviceWrites(dir string) (func() (uint64, error), string) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, ""
	}
	dev := uint64(st.Dev)
	path := fmt.Sprintf("/sys/dev/block/%d:%d/stat", unix.Major(dev), unix.Minor(dev))
	f, err := os.Open(path)
	if err != nil {
		return nil, path
	}
	read := func() (uint64, error) {
		buf := make([]byte, blockStatMax)
		n, err := f.ReadAt(buf, 0)
		switch {
		case n == len(buf):
			return 0, fmt.Errorf("%w: longer than %d bytes", errBlockStat, blockStatMax)
		case n == 0 && err != nil:
			return 0, err
		}
		return parseBlockStat(buf[:n])
	}
	if _, err := read(); err != nil {
		f.Close()
		return nil, path
	}
	return read, path
}

// deviceIdle reads the data directory's device counter and returns how
// long the device has completed no write; false when that is unknown.
func (n *Node) deviceIdle() (time.Duration, bool) {
	s := &n.stall
	s.writesOnce.Do(func() {
		if s.writes != nil || !s.onOS { // a test's; logs on another file system
			return
		}
		var path string
		s.writes, path = blockDeviceWrites(n.cfg.DataDir)
		if s.writes == nil {
			n.log.Info("disk stall detection: the data directory's block device is unknown, so any operation in flight over --disk-stall-timeout is a stall, slow or hung",
				"data_dir", n.cfg.DataDir, "stat", path)
		}
	})
	if s.writes == nil {
		return 0, false
	}
	c, err := s.writes()
	if err != nil {
		return 0, false
	}
	now := s.clock()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.progress.observe(now, c), true
}
