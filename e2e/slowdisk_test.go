package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"paymentlog/internal/loopdisk"
)

// Slow-disk tests: real node processes on loop-mounted ext4 disks whose
// writes the test throttles (loopdisk.ThrottleWrites), a disk that is slow
// but works, under --fsync interval: the node must not take it for a
// stalled one.

// slowDiskMBps is the write limit of every node's disk, in MB/s
// (PAYMENTLOG_E2E_SLOWDISK_MBPS, default 1: about half what the
// producer writes, so dirty pages pile up and each flush writes back
// seconds of records).
func slowDiskMBps(t *testing.T) float64 {
	v := os.Getenv("PAYMENTLOG_E2E_SLOWDISK_MBPS")
	if v == "" {
		// A measurement, run on request: in one of four clean-clone runs a
		// node declared a stall on the 1 MB/s disk (op max 3.1 s). The
		// throttled loop devices themselves go that long without
		// completing a write: sampled every 20 ms during three runs, with
		// requests in flight, the longest gaps were 3.6, 3.0 and 2.4 s (a
		// request is up to 1280 KiB, over a second of the limit), and
		// then an operation in flight past the timeout is a stall by the
		// device rule (node/diskstall_progress.go). The test fails when
		// the two meet; it logs the detector's lines ("why") when it does.
		t.Skip("set PAYMENTLOG_E2E_SLOWDISK_MBPS (e.g. 1) to run the slow-disk measurement")
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f <= 0 {
		t.Fatalf("PAYMENTLOG_E2E_SLOWDISK_MBPS=%q: want a positive number", v)
	}
	return f
}

// TestSlowDiskIntervalFsyncIsNoStall: with every node's disk throttled
// and --fsync interval, acks=all writes go on for 15 s; the test reports
// each node's longest disk operation (paymentlog_disk_op_max_seconds)
// and the stalls it declared, which must be none: the devices write all
// along (node/diskstall_progress.go). Without the device watch every node
// declared a stall within the first 5 s at 1 MB/s. Not longer: on a disk
// slower than the load each flush takes about twice the one before
// (1.5, 3, 6, 11, 18 s), and one in flight for ten timeouts (20 s) is a
// stall however busy the device.
func TestSlowDiskIntervalFsyncIsNoStall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	mbps := slowDiskMBps(t)
	dc := startDiskFullClusterSized(t, ctx, "ext4", 512, "--fsync", "interval=200ms", "--segment-bytes", fmt.Sprint(32<<20))
	for id, d := range dc.disks {
		if err := d.ThrottleWrites(int64(mbps * 1e6)); errors.Is(err, loopdisk.ErrNoThrottle) {
			t.Skip(err)
		} else if err != nil {
			t.Fatal(err)
		}
		dev, majMin, _ := d.Device()
		t.Logf("node %d: %s (%s) limited to %.1f MB/s of writes", id, dev, majMin, mbps)
	}
	stop := dc.producer(ctx)
	defer stop()
	dc.waitAcks(ctx, 500, 30*time.Second, "writes on the slow disks")
	gaps := dc.watchGaps(ctx)
	start, acked := time.Now(), dc.ackedCount()
	for time.Since(start) < 15*time.Second {
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(5 * time.Second):
		}
		for _, id := range dc.c.IDs() {
			m := dc.diskMetrics(id)
			t.Logf("%4.0fs node %d: op max %.2fs, oldest in flight %.2fs, stalls %v", time.Since(start).Seconds(), id,
				m["paymentlog_disk_op_max_seconds"], m["paymentlog_disk_oldest_inflight_seconds"], m["paymentlog_disk_stalls_total"])
		}
	}
	slowest := 0.0 // seconds: the test shows something only past the stall timeout
	for _, id := range dc.c.IDs() {
		m := dc.diskMetrics(id)
		s, ok := m["paymentlog_disk_stalls_total"]
		if !ok {
			t.Fatalf("node %d serves no paymentlog_disk_stalls_total", id)
		}
		if s != 0 {
			t.Errorf("node %d declared %v disk stalls on a slow but working disk", id, s)
			dc.logStallLines(id)
		}
		slowest = max(slowest, m["paymentlog_disk_op_max_seconds"])
	}
	if stallTimeout := (2 * time.Second).Seconds(); slowest <= stallTimeout {
		t.Fatalf("no disk operation took longer than the %vs stall timeout (longest %.2fs): the disks were not slow, and the test shows nothing", stallTimeout, slowest)
	}
	gap, _ := gaps()
	n := dc.ackedCount() - acked
	t.Logf("%d records acknowledged in %v (%.2f MB/s of values), longest pause of acknowledgements %v",
		n, time.Since(start).Round(time.Second), float64(n)*210/time.Since(start).Seconds()/1e6, gap.Round(time.Millisecond))
	stop()
	dc.noCrashes()
}

// stallLine matches a log line of the disk stall detector.
var stallLine = regexp.MustCompile(`(?m)^.*msg="disk (stall|slow).*$`)

// logStallLines logs node id's log lines of the stall detector (which
// rule declared a stall, and the disk operations it saw).
func (dc *dfCluster) logStallLines(id int32) {
	dc.t.Helper()
	b, _, err := dc.c.LogSince(id, 0)
	if err != nil {
		dc.t.Logf("node %d's log: %v", id, err)
		return
	}
	for _, l := range stallLine.FindAll(b, -1) {
		dc.t.Logf("node %d: %s", id, l)
	}
}

// diskMetrics reads node id's paymentlog_disk_* series.
func (dc *dfCluster) diskMetrics(id int32) map[string]float64 {
	dc.t.Helper()
	resp, err := http.Get("http://" + dc.c.Node(id).MetricsAddr + "/metrics")
	if err != nil {
		dc.t.Fatalf("node %d's metrics: %v", id, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		dc.t.Fatalf("node %d's metrics: %v", id, err)
	}
	m := map[string]float64{}
	for _, s := range regexp.MustCompile(`(?m)^(paymentlog_disk_[a-z_]+) (\S+)$`).FindAllSubmatch(body, -1) {
		v, err := strconv.ParseFloat(string(s[2]), 64)
		if err != nil {
			dc.t.Fatalf("node %d's metric %s: %v", id, s[1], err)
		}
		m[string(s[1])] = v
	}
	return m
}
