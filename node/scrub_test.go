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
	"paymentlog/node/metadata"
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

// damagedFollower is a 3-node cluster whose topic ledger (1 MiB segments)
// holds 3000 records of 1 KB on every replica.
type damagedFollower struct {
	tc       *testCluster
	part     metadata.PartitionState
	f        int32    // a follower of ledger-0
	fdir     string   // its partition directory
	logs     []string // its segment files, oldest first
	leaderHW int64
}

func newDamagedFollower(ctx context.Context, t *testing.T) *damagedFollower {
	t.Helper()
	tc := mustStartClusterWith(t, 3, func(c *node.Config) { c.LogScrubInterval = 0 }) // tests run the pass
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
	d := &damagedFollower{tc: tc}
	d.part, _ = tc.image().Partition("ledger", 0)
	for _, r := range d.part.Replicas {
		if r != d.part.Leader {
			d.f = r
			break
		}
	}
	d.leaderHW, _, _, _ = tc.node(d.part.Leader).Broker().PartitionInfo("ledger", 0)
	waitFor(t, "the follower to hold every record", 20*time.Second, func() bool {
		_, _, end, ok := tc.node(d.f).Broker().PartitionInfo("ledger", 0)
		return ok && end == d.leaderHW
	})
	d.fdir = filepath.Join(tc.dir, fmt.Sprintf("node%d", d.f), "ledger-0")
	d.logs, _ = filepath.Glob(filepath.Join(d.fdir, "*.log"))
	slices.Sort(d.logs)
	if len(d.logs) < 3 {
		t.Fatalf("follower segments %v; want at least 3", d.logs)
	}
	return d
}

// damage flips a byte in the records of the second batch of the follower's
// second segment (sealed).
func (d *damagedFollower) damage(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(d.logs[1])
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
	fh, err := os.OpenFile(d.logs[1], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt([]byte{data[badPos+len(bad)-10] ^ 0x55}, int64(badPos+len(bad)-10)); err != nil {
		t.Fatal(err)
	}
}

// repaired checks, after the follower started again, that it is back in
// the ISR with the leader's records byte for byte, registered torn, and
// that what the repair took out is set aside, not destroyed.
func (d *damagedFollower) repaired(t *testing.T) {
	t.Helper()
	tc, f := d.tc, d.f
	waitFor(t, "the repaired follower back in the ISR with the leader's records", 30*time.Second, func() bool {
		p, ok := tc.image().Partition("ledger", 0)
		_, _, end, found := tc.node(f).Broker().PartitionInfo("ledger", 0)
		return ok && p.InISR(f) && found && end == d.leaderHW
	})
	if !tc.node(f).Broker().TornAtOpen("ledger", d.part.TopicID, 0) {
		t.Fatal("the repaired log was not reported torn")
	}
	want := partitionBatches(t, filepath.Join(tc.dir, fmt.Sprintf("node%d", d.part.Leader), "ledger-0"))
	got := partitionBatches(t, d.fdir)
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
	q := filepath.Join(d.fdir, segment.ScrubQuarantinePrefix+strings.TrimSuffix(filepath.Base(d.logs[1]), ".log"))
	kept, _ := filepath.Glob(filepath.Join(q, "*"))
	var keptLogs int
	var size int64
	for _, k := range kept {
		if strings.HasSuffix(k, ".log") {
			keptLogs++
		}
		if fi, err := os.Stat(k); err == nil {
			size += fi.Size()
		}
	}
	if keptLogs != len(d.logs)-1 {
		t.Fatalf("set aside %v; want the damaged segment and the %d after it", kept, len(d.logs)-2)
	}
	// /metrics shows what waits for the operator, and forgets it once
	// removed (at the next retention pass).
	b := tc.node(f).Broker()
	if got := b.Stats().ScrubQuarantineBytes; got != size || size == 0 {
		t.Fatalf("quarantine bytes %d; the directory holds %d", got, size)
	}
	if err := os.RemoveAll(q); err != nil {
		t.Fatal(err)
	}
	b.ApplyRetention(context.Background())
	if got := b.Stats().ScrubQuarantineBytes; got != 0 {
		t.Fatalf("quarantine bytes %d after the operator removed it", got)
	}
}

// A batch damaged on a follower's disk, in a sealed segment no open
// scans, is found by the scrub: the node stops (its log failed), and its
// next start truncates the partition at that batch and fetches the rest
// from the leader again, ending with the leader's records, back in the ISR.
func TestScrubRepairsACorruptFollower(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := newDamagedFollower(ctx, t)
	d.damage(t)
	fn := d.tc.node(d.f)
	s := fn.Broker().ScrubNow(ctx)
	if len(s.Corrupt) != 1 || s.Corrupt[0] != "ledger-0" {
		t.Fatalf("scrub summary %+v; want ledger-0 corrupt", s)
	}
	select {
	case <-fn.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the node did not stop after its log failed")
	}
	d.tc.mu.Lock()
	delete(d.tc.nodes, d.f)
	d.tc.mu.Unlock()
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	fn.Shutdown(sctx)
	scancel()
	d.tc.start(d.f)
	d.repaired(t)
}

// A batch damaged in a sealed segment that a restart's own scan reads
// (after a crash, with the recovery point lost) is repaired the same way
// under --fsync always: set aside, truncated, registered torn, fetched
// again; before, the partition stayed unopened on that node.
func TestOpenRepairsADamagedSealedSegment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := newDamagedFollower(ctx, t)
	d.tc.kill(d.f)
	d.damage(t)
	// As after a crash that lost the recovery point: Open scans every
	// segment (a test node's Kill closes its logs cleanly).
	for _, name := range []string{".clean-shutdown", "recovery-point"} {
		if err := os.Remove(filepath.Join(d.fdir, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	d.tc.start(d.f)
	d.repaired(t)
}
