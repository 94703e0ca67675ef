package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/bench/chaos"
	"paymentlog/bench/localcluster"
	"paymentlog/client"
	"paymentlog/quic"
)

// A follower whose scrub finds a batch rotted on its disk repairs itself
// without a supervisor: `node start` stops the node and starts it again in
// the same process (--log-scrub-restart, the default), which truncates the
// partition at the batch, sets aside what follows, and fetches it again
// from the leader. Real processes, a real rot (bytes flipped in a sealed
// segment while the node runs, as a failing disk would).
func TestScrubRestartRepairsInProcess(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic, records = "payments", 3000
	c, err := localcluster.Start(ctx, localcluster.Options{
		Binary:   binary,
		BaseDir:  t.TempDir(),
		Insecure: true,
		Metrics:  true,
		ExtraArgs: []string{
			"--segment-bytes", fmt.Sprint(1 << 20),
			"--replica-lag-time", "1s",
			"--log-scrub-interval", "1s", // the first pass a second after the start, then every second
			"--log-scrub-bytes-per-sec", "0",
			"--log-level", "info",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, id := range c.IDs() {
				t.Logf("--- node %d log (last lines):\n%s", id, c.LogTail(id, 30))
			}
		}
		c.Close()
	})
	cl, err := client.New(ctx, client.Config{Bootstrap: c.Bootstrap(), TLS: quic.TLSConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close(context.Background())
	if _, err := cl.Admin().CreateTopic(ctx, client.TopicSpec{Name: topic, Partitions: 1, ReplicationFactor: 3, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := cl.NewProducer(client.ProducerConfig{Acks: client.AcksAll})
	if err != nil {
		t.Fatal(err)
	}
	value := strings.Repeat("x", 1000)
	var failed atomic.Int64
	for i := range records {
		r := &client.Record{Topic: topic, Value: []byte(fmt.Sprintf("%05d%s", i, value))}
		if err := p.Produce(ctx, r, func(d client.Delivery) {
			if d.Err != nil {
				failed.Add(1)
			}
		}); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := p.Close(ctx); err != nil || failed.Load() != 0 {
		t.Fatalf("producer: %v, %d records not acknowledged", err, failed.Load())
	}
	leader, _, err := c.PartitionLeader(ctx, topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	follower := leader%3 + 1
	dir := func(id int32) string { return filepath.Join(c.Node(id).DataDir, topic+"-0") }
	// Every replica holds every record (sealed segments of 1 MiB: three of them).
	if err := c.WaitFor(ctx, func(context.Context) (bool, error) {
		s, err := chaos.ScanPartition(dir(follower), false)
		if err != nil {
			return false, err
		}
		if s.LEO() < records || len(s.Files) < 3 {
			return false, fmt.Errorf("node %d: log end %d, %d segments", follower, s.LEO(), len(s.Files))
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	pid, starts := c.Node(follower).PID, c.Node(follower).Starts
	rot, err := chaos.ApplyTorn(dir(follower), chaos.Torn{Mode: chaos.TornRot, Seed: 38}, 0)
	if err != nil || !rot.Applied() || rot.Action != "rot" {
		t.Fatalf("rot of node %d's partition: %v, %v", follower, rot, err)
	}
	t.Logf("node %d: %v", follower, rot)

	// The scrub finds it; the node starts again in its process.
	if err := c.WaitFor(ctx, func(context.Context) (bool, error) {
		b, err := os.ReadFile(c.Node(follower).LogPath)
		return strings.Contains(string(b), "starting the node again in this process"), err
	}); err != nil {
		t.Fatalf("node %d did not restart after its scrub: %v", follower, err)
	}
	// ... and is back in the ISR, having fetched again what it cut.
	if err := c.WaitFor(ctx, func(ctx context.Context) (bool, error) { return c.InSync(ctx, topic) }); err != nil {
		t.Fatal(err)
	}
	if n := c.Node(follower); n.PID != pid || n.Starts != starts || !n.Running {
		t.Fatalf("node %d: pid %d (was %d), %d starts (was %d), running %v: the process did not survive its repair", follower, n.PID, pid, n.Starts, starts, n.Running)
	}
	if cr := c.Crashes(); len(cr) != 0 {
		t.Fatalf("nodes exited: %v", cr)
	}
	set, err := filepath.Glob(filepath.Join(dir(follower), "scrub-quarantine-*"))
	if err != nil || len(set) != 1 {
		t.Fatalf("node %d's quarantine: %v, %v (want one scrub-quarantine-* directory)", follower, set, err)
	}
	// The restarted node serves its metrics on the same address, and they
	// show what it set aside and that it restarted in its process.
	resp, err := http.Get("http://" + c.Node(follower).MetricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("node %d's metrics after its restart: %v", follower, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !regexp.MustCompile(`(?m)^paymentlog_log_scrub_quarantine_bytes [1-9]`).Match(body) {
		t.Fatalf("node %d's metrics after its restart (%v): no quarantined bytes in\n%s", follower, err, body)
	}
	if !regexp.MustCompile(`(?m)^paymentlog_node_in_process_restarts_total 1$`).Match(body) {
		t.Fatalf("node %d's metrics after its restart: paymentlog_node_in_process_restarts_total is not 1 in\n%s", follower, body)
	}
	// Its batches are the leader's again, the rotten one included.
	if err := c.WaitFor(ctx, func(context.Context) (bool, error) {
		l, err := chaos.ScanPartition(dir(leader), false)
		if err != nil {
			return false, err
		}
		f, err := chaos.ScanPartition(dir(follower), false)
		if err != nil {
			return false, err
		}
		if f.Err != nil {
			return false, fmt.Errorf("node %d: %w", follower, f.Err)
		}
		if f.LEO() < records || len(f.Batches) > len(l.Batches) {
			return false, fmt.Errorf("node %d: log end %d, %d batches; the leader's %d batches", follower, f.LEO(), len(f.Batches), len(l.Batches))
		}
		for i, b := range f.Batches {
			if b != l.Batches[i] {
				return false, fmt.Errorf("batch %d: node %d %+v, leader %+v", i, follower, b, l.Batches[i])
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
}
