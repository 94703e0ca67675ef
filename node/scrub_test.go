package node_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/segment"
)

// partitionBatches reads the batches of a partition directory's segment
// files, oldest first, stopping in each file at the first bytes that are
// not a whole valid batch (the active segment's preallocated zeros).
func partitionBatches(t *testing.T, dir string) []segment.Batch {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	var out []segment.Batch
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		segment.SplitBatches(data, func(b segment.Batch) error { //nolint:errcheck // stops at the zeros
			out = append(out, append(segment.Batch(nil), b...))
			return nil
		})
	}
	return out
}

// A batch damaged on a follower's disk, in a sealed segment no open
// scans, is found by the scrub: the node stops (its log failed), and its
// next start truncates the partition at that batch and fetches the rest
// from the leader again, ending with the leader's records, back in the ISR.
func TestScrubRepairsACorruptFollower(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(c *node.Config) { c.LogScrubInterval = 0 }) // the test runs the pass
	tc.waitAlive(3)
	cl := tc.client(ctx)
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "ledger", Partitions: 1, ReplicationFactor: 3, MinISR: 2,
		Configs: map[string]string{"segment.bytes": "1048576"}})
	p, err := cl.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	value := []byte(strings.Repeat("x", 1000))
	for i := range 3000 {
		if err := p.Produce(ctx, &client.Record{Topic: "ledger", Partition: 0, PartitionSet: true, Key: fmt.Appendf(nil, "k%d", i), Value: value}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	part, _ := tc.image().Partition("ledger", 0)
	var f int32
	for _, r := range part.Replicas {
		if r != part.Leader {
			f = r
			break
		}
	}
	leaderHW, _, _, _ := tc.node(part.Leader).Broker().PartitionInfo("ledger", 0)
	waitFor(t, "the follower to hold every record", 20*time.Second, func() bool {
		_, _, end, ok := tc.node(f).Broker().PartitionInfo("ledger", 0)
		return ok && end == leaderHW
	})

	// Damage a record of the follower's second segment (sealed, trusted).
	fdir := filepath.Join(tc.dir, fmt.Sprintf("node%d", f), "ledger-0")
	logs, _ := filepath.Glob(filepath.Join(fdir, "*.log"))
	slices.Sort(logs)
	if len(logs) < 3 {
		t.Fatalf("follower segments %v; want at least 3", logs)
	}
	data, err := os.ReadFile(logs[1])
	if err != nil {
		t.Fatal(err)
	}
	var bad segment.Batch
	var badPos int
	pos := 0
	segment.SplitBatches(data, func(b segment.Batch) error { //nolint:errcheck
		if bad == nil && pos > 0 {
			bad, badPos = b, pos
		}
		pos += len(b)
		return nil
	})
	fh, err := os.OpenFile(logs[1], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte{data[badPos+len(bad)-10] ^ 0x55}, int64(badPos+len(bad)-10)); err != nil {
		t.Fatal(err)
	}
	fh.Close()

	fn := tc.node(f)
	s := fn.Broker().ScrubNow(ctx)
	if len(s.Corrupt) != 1 || s.Corrupt[0] != "ledger-0" {
		t.Fatalf("scrub summary %+v; want ledger-0 corrupt", s)
	}
	select {
	case <-fn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop after its log failed")
	}
	tc.mu.Lock()
	delete(tc.nodes, f)
	tc.mu.Unlock()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	fn.Shutdown(sctx)
	scancel()

	tc.start(f)
	waitFor(t, "the repaired follower back in the ISR with the leader's records", 30*time.Second, func() bool {
		p, ok := tc.image().Partition("ledger", 0)
		_, _, end, found := tc.node(f).Broker().PartitionInfo("ledger", 0)
		return ok && p.InISR(f) && found && end == leaderHW
	})
	if !tc.node(f).Broker().TornAtOpen("ledger", part.TopicID, 0) {
		t.Fatal("the repaired log was not reported torn")
	}
	want := partitionBatches(t, filepath.Join(tc.dir, fmt.Sprintf("node%d", part.Leader), "ledger-0"))
	got := partitionBatches(t, fdir)
	if len(got) != len(want) {
		t.Fatalf("follower holds %d batches, leader %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("batch %d (offset %d) differs from the leader's", i, want[i].BaseOffset())
		}
	}
	if b := got[0]; b.BaseOffset() != 0 {
		t.Fatalf("first batch at %d", b.BaseOffset())
	}
	// What the repair took out of the log is set aside, not destroyed.
	q := filepath.Join(fdir, "scrub-quarantine-"+strings.TrimSuffix(filepath.Base(logs[1]), ".log"))
	if kept, _ := filepath.Glob(filepath.Join(q, "*.log")); len(kept) != len(logs)-1 {
		t.Fatalf("set aside %v; want the marked segment and the %d after it", kept, len(logs)-2)
	}
}
