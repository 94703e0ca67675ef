package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/segment"
)

// The node sweeps its metadata log's scrub quarantines on its own, every
// RetentionCheckInterval (--retention-check-interval): a redundant one
// (past its retention, on a controller of three, unguarded, applied past
// it) appearing while the node runs is removed without a call from the
// test, and paymentlog_metadata_log_scrub_quarantine_removed_total counts
// it. The quarantine is a copy of the controller's own metadata segment,
// set aside an hour ago, as a repair would have left it.
func TestMetadataQuarantineSweptOnItsOwn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(c *node.Config) {
		withMetrics(c)
		c.LogScrubInterval = 0
		c.RetentionCheckInterval = 50 * time.Millisecond
		c.LogScrubQuarantineRetention = time.Minute
	})
	tc.waitAlive(3)
	cl := tc.client(ctx)
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "before", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	const id = 2
	n := tc.node(id)
	dir := filepath.Join(tc.dir, fmt.Sprintf("node%d", id), node.MetadataDirName)
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var seg string
	for _, e := range names {
		if strings.HasSuffix(e.Name(), ".log") {
			seg = e.Name() // the newest: names are sorted
		}
	}
	if seg == "" {
		t.Fatalf("no segment in %s", dir)
	}
	// Made beside the directory and renamed into it whole: a sweep that
	// finds a quarantine without its set-aside time records its own.
	staged := filepath.Join(tc.dir, "staged-quarantine")
	if err := os.Mkdir(staged, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := segment.CopyFile(segment.OSFS{}, filepath.Join(dir, seg), filepath.Join(staged, seg)); err != nil {
		t.Fatal(err)
	}
	if err := segment.WriteSetAsideAt(segment.OSFS{}, staged, time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	q := filepath.Join(dir, segment.ScrubQuarantinePrefix+strings.TrimSuffix(seg, ".log"))
	if err := os.Rename(staged, q); err != nil {
		t.Fatal(err)
	}
	// Applied past the copy's last entry.
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "after", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	waitFor(t, "the sweep loop to remove the quarantine", 20*time.Second, func() bool {
		_, err := os.Stat(q)
		return errors.Is(err, os.ErrNotExist) && n.Raft().ScrubStats().QuarantinesRemoved == 1 // counted just after
	})
	if got := value(t, scrape(t, n.MetricsAddr()), "paymentlog_metadata_log_scrub_quarantine_removed_total"); got != 1 {
		t.Fatalf("paymentlog_metadata_log_scrub_quarantine_removed_total %v, want 1", got)
	}
}
