package node

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
)

// TestSlowDiskIsNoStall: by the injected clock and device counter, an
// fsync in flight for 10s while the device completes writes every 500ms
// is slow, not a stall (logged once at Warn, not in /readyz); once the
// device completes nothing for over a timeout it is a stall, which lasts
// until the fsync returns however the device writes meanwhile (counted
// once). Past slowDiskStallFactor timeouts an operation is a stall
// however busy the device is.
func TestSlowDiskIsNoStall(t *testing.T) {
	r := newStallRig(t)
	n := r.n
	var writes atomic.Uint64
	n.stall.writes = func() (uint64, error) { return writes.Load(), nil }
	writing := func(d time.Duration) { // the device writes every 500ms for d
		for end := r.ns.Load() + int64(d); r.ns.Load() < end; {
			r.advance(500 * time.Millisecond)
			writes.Add(3)
			n.diskStalled()
		}
	}
	release := r.block()
	for range 20 { // 10s
		writing(500 * time.Millisecond)
		if n.diskStalled() || n.diskStallReason() != "" {
			t.Fatalf("a stall at %v in flight while the device writes", n.diskStallStats().oldest)
		}
	}
	if c := strings.Count(r.logs(), "level=WARN msg=\"disk slow: an operation has been in flight longer than --disk-stall-timeout, but the device is writing"); c != 1 {
		t.Fatalf("%d Warn lines for the slow operation, want 1:\n%s", c, r.logs())
	}
	// The last write was seen at 10s, and dated to the look before (9.5s).
	r.advance(1500 * time.Millisecond) // no write for (at most) exactly the timeout
	if n.diskStalled() {
		t.Fatal("a stall with the device idle for exactly the timeout")
	}
	r.advance(100 * time.Millisecond)
	if !n.diskStalled() || !strings.HasPrefix(n.diskStallReason(), "disk stalled: fdatasync of /p-0.log in flight for 11.6s") {
		t.Fatalf("no stall with the device idle for 2.1s: %q", n.diskStallReason())
	}
	writing(5 * time.Second)
	if s := n.diskStallStats(); !n.diskStalled() || s.stalls != 1 {
		t.Fatalf("the stall ended, or was counted again, with the device writing and the fsync in flight: %+v", s)
	}
	release()
	if n.diskStalled() || n.diskStallStats().stalls != 1 {
		t.Fatalf("after the fsync returned: %+v", n.diskStallStats())
	}

	r.advance(relapseWindow) // (no hold-down after the next stall)
	release = r.block()
	defer release()
	writing(10 * slowDiskStallFactor * 200 * time.Millisecond) // ten timeouts exactly
	if n.diskStalled() {
		t.Fatalf("a stall at %v in flight, the device writing", n.diskStallStats().oldest)
	}
	writing(500 * time.Millisecond)
	if !n.diskStalled() {
		t.Fatalf("no stall after %v in flight, over %d timeouts", n.diskStallStats().oldest, slowDiskStallFactor)
	}
}

// TestHungDiskStallsAtTheTimeout: a device that completes nothing (a
// frozen file system, a hung SAN) makes an operation a stall as soon as
// it is older than the timeout, as without the device watch; so does an
// unreadable counter.
func TestHungDiskStallsAtTheTimeout(t *testing.T) {
	for _, c := range []struct {
		name   string
		writes func() (uint64, error)
	}{
		{"idle device", func() (uint64, error) { return 7, nil }},
		{"unreadable counter", func() (uint64, error) { return 0, errors.New("gone") }},
		// Writes seen at the first look after the one before the
		// operation, 2s later: they may all be 2s old.
		{"writes seen only after the timeout", countsOnce(7)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newStallRig(t)
			r.n.stall.writes = c.writes
			r.n.diskStalled() // a look before the operation
			release := r.block()
			defer release()
			r.advance(2 * time.Second)
			if r.n.diskStalled() {
				t.Fatal("a stall at the timeout")
			}
			r.advance(100 * time.Millisecond)
			if !r.n.diskStalled() {
				t.Fatal("no stall at 2.1s in flight")
			}
		})
	}
}

// TestParseBlockStat: the counter sums completed writes, discards and
// flushes, on a current kernel's 17 fields and an old one's 11; anything
// else is an error.
func TestParseBlockStat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		err  bool
	}{
		{"    9224       16   341828     2443   798652   684779 14518776   768748        0   548524  1195766        5        0        0        0   474239   424574\n", 798652 + 5 + 474239, false},
		{"1 2 3 4 5 6 7 8 9 10 11", 5, false},
		{"1 2 3 4 5 6 7 8 9 10 11 12 13", 5 + 12, false},
		{"1 2 3 4 5 6 7 8 9 10", 0, true},
		{"1 2 3 4 x 6 7 8 9 10 11", 0, true},
		{"1 2 3 4 -5 6 7 8 9 10 11", 0, true},
		{"", 0, true},
	} {
		got, err := parseBlockStat([]byte(c.in))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseBlockStat(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
		if err != nil && !errors.Is(err, errBlockStat) {
			t.Errorf("parseBlockStat(%q): %v is not errBlockStat", c.in, err)
		}
	}
}

// FuzzParseBlockStat: any bytes give a counter or errBlockStat, never a
// panic, and a line of at least 16 numbers sums fields 5, 12 and 16.
func FuzzParseBlockStat(f *testing.F) {
	f.Add([]byte("    9224       16   341828     2443   798652   684779 14518776   768748        0   548524  1195766        0        0        0        0   474239   424574\n"))
	f.Add([]byte("1 2 3 4 5 6 7 8 9 10 11"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := parseBlockStat(b)
		if err != nil {
			if !errors.Is(err, errBlockStat) {
				t.Fatalf("error %v is not errBlockStat", err)
			}
			return
		}
		f := strings.Fields(string(b))
		if len(f) < 11 {
			t.Fatalf("%q: a counter (%d) from fewer than 11 fields", b, got)
		}
		if len(f) >= 16 {
			var want uint64
			for _, i := range []int{4, 11, 15} {
				v, err := strconv.ParseUint(f[i], 10, 64)
				if err != nil {
					t.Fatalf("%q: a counter (%d) from field %d %q, not a number", b, got, i+1, f[i])
				}
				want += v
			}
			if got != want {
				t.Fatalf("%q: counter %d, want fields 5 + 12 + 16 = %d", b, got, want)
			}
		}
	})
}

// countsOnce returns a device counter that reads from at the first look
// and from+1 at every later one.
func countsOnce(from uint64) func() (uint64, error) {
	var looks atomic.Uint64
	return func() (uint64, error) { return from + min(looks.Add(1)-1, 1), nil }
}

// TestDeviceWatchOnlyOnOS: a node whose logs are not on the OS's file
// systems (a test's MemFS) does not watch its data directory's device,
// which is not theirs; one whose logs are does, where the device has
// counters.
func TestDeviceWatchOnlyOnOS(t *testing.T) {
	dir := t.TempDir()
	for _, onOS := range []bool{false, true} {
		n := &Node{cfg: Config{DataDir: dir, DiskStallTimeout: time.Second}, log: slog.New(slog.DiscardHandler)}
		n.stall.ops, n.stall.onOS = segment.NewDiskOps(nil), onOS
		_, known := n.deviceIdle()
		if !onOS && known {
			t.Fatal("a device watched for logs not on the OS's file systems")
		}
		if onOS && !known {
			if w, path := blockDeviceWrites(dir); w == nil {
				t.Skipf("no block device counters for %s (%s)", dir, path)
			}
			t.Fatal("no device watched for logs on the OS's file systems")
		}
	}
}

// TestBlockDeviceWritesReadsAfresh: the reader keeps its stat file open and
// each call reads the counters as they are then: a write made durable in
// the directory shows in the next call.
func TestBlockDeviceWritesReadsAfresh(t *testing.T) {
	dir := t.TempDir()
	read, path := blockDeviceWrites(dir)
	if read == nil {
		t.Skipf("no block device counters for %s (%s)", dir, path)
	}
	before, err := read()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 1<<16)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := read()
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Fatalf("%s: %d completed writes and flushes after a durable write, %d before", path, after, before)
	}
}
