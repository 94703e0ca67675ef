package node_test

import (
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

// damageSecondSegment flips a byte in the records of the second batch of
// the second segment file of the partition directory dir (sealed), and
// makes its next open scan every segment, as after a crash that lost the
// recovery point. It returns the quarantine a repair there sets aside.
func damageSecondSegment(t *testing.T, dir string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	slices.Sort(logs)
	if len(logs) < 3 {
		t.Fatalf("%s: segments %v; want at least 3", dir, logs)
	}
	data, err := os.ReadFile(logs[1])
	if err != nil {
		t.Fatal(err)
	}
	first := 0
	segment.SplitBatches(data, func(b segment.Batch) error { //nolint:errcheck // the first batch only
		if first == 0 {
			first = len(b)
		}
		return nil
	})
	data[first+segment.HeaderSize+5] ^= 0x55
	if err := os.WriteFile(logs[1], data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".clean-shutdown", "recovery-point"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, segment.ScrubQuarantinePrefix+strings.TrimSuffix(filepath.Base(logs[1]), ".log"))
}

// dirBytes is the size of the files in dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	var n int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// produce writes n records of 1 KB to the partition.
func produce(ctx context.Context, t *testing.T, cl *client.Client, topic string, partition int32, n int) {
	t.Helper()
	p, err := cl.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	value := []byte(strings.Repeat("s", 1000))
	for i := range n {
		if err := p.Produce(ctx, &client.Record{Topic: topic, Partition: partition, PartitionSet: true, Key: fmt.Appendf(nil, "k%d", i), Value: value}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// A follower repaired at its open (a damaged sealed segment) fetches the
// records again from its leader; once its quarantine is past the retention
// (an injected clock) the sweep removes it, logged and counted, and the
// gauge drops. The quarantine of a partition of replication factor 1 on
// the same node, repaired the same way, is the only copy: it stays, even
// once new records have taken the lost offsets.
func TestSweepRemovesARefetchedQuarantineNotTheOnlyCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := newDamagedFollower(ctx, t)
	tc, f := d.tc, d.f

	// solo: replication factor 1, a partition on each node; f's is damaged.
	cl := tc.client(ctx)
	createTopic(ctx, t, tc, cl, client.TopicSpec{Name: "solo", Partitions: 3, ReplicationFactor: 1, MinISR: 1,
		Configs: map[string]string{"segment.bytes": "1048576"}})
	var solo int32 = -1
	for i := range int32(3) {
		if p, ok := tc.image().Partition("solo", i); ok && p.Leader == f {
			solo = i
		}
	}
	if solo < 0 {
		t.Fatalf("no partition of solo on node %d", f)
	}
	produce(ctx, t, cl, "solo", solo, 3000)

	tc.kill(f)
	ledgerQ := damageSecondSegment(t, d.fdir)
	soloQ := damageSecondSegment(t, filepath.Join(tc.dir, fmt.Sprintf("node%d", f), fmt.Sprintf("solo-%d", solo)))
	tc.start(f)
	waitFor(t, "the repaired follower back in the ISR with the leader's records", 30*time.Second, func() bool {
		p, ok := tc.image().Partition("ledger", 0)
		hw, _, end, found := tc.node(f).Broker().PartitionInfo("ledger", 0)
		return ok && p.InISR(f) && found && end == d.leaderHW && hw == d.leaderHW
	})
	for _, q := range []string{ledgerQ, soloQ} {
		if _, err := os.Stat(q); err != nil {
			t.Fatalf("the repair set nothing aside: %v", err)
		}
	}
	// solo, repaired on its only replica, has lost offsets 992 to 2999
	// and takes new records past them, in a new leader epoch: its HW
	// passes the quarantine's last offset, yet what the quarantine holds
	// is on no replica.
	produce(ctx, t, cl, "solo", solo, 2500)
	if hw, _, _, _ := tc.node(f).Broker().PartitionInfo("solo", solo); hw <= 3000 {
		t.Fatalf("solo's HW %d; want it past the 3000 records produced before the repair", hw)
	}
	b := tc.node(f).Broker()
	if n := b.SweepQuarantines(ctx, time.Now()); n != 0 {
		t.Fatalf("the sweep removed %d quarantines set aside moments ago", n)
	}
	later := time.Now().Add(node.DefaultConfig().LogScrubQuarantineRetention + time.Minute)
	// The node learns that it is back in the ISR from the metadata it
	// applies, after the controller: until then the sweep keeps it.
	removed := 0
	waitFor(t, "the sweep past the retention to remove ledger's quarantine", 30*time.Second, func() bool {
		removed += b.SweepQuarantines(ctx, later)
		return removed > 0
	})
	if removed != 1 {
		t.Fatalf("the sweep past the retention removed %d quarantines; want ledger's", removed)
	}
	if _, err := os.Stat(ledgerQ); !os.IsNotExist(err) {
		t.Fatalf("ledger's quarantine is still there (%v)", err)
	}
	if _, err := os.Stat(soloQ); err != nil {
		t.Fatalf("the only copy, solo's quarantine, was removed: %v", err)
	}
	if n := b.SweepQuarantines(ctx, later.Add(365*24*time.Hour)); n != 0 {
		t.Fatalf("a year later the sweep removed %d more", n)
	}
	s := b.Stats()
	if s.ScrubQuarantineRemoved != 1 || s.ScrubQuarantineBytes != dirBytes(t, soloQ) {
		t.Fatalf("removed %d, quarantined bytes %d; want 1, and solo's %d", s.ScrubQuarantineRemoved, s.ScrubQuarantineBytes, dirBytes(t, soloQ))
	}
}

// The cluster's log.scrub.quarantine.retention.ms reaches every node's
// sweep, and deleting it brings back each node's flag.
func TestQuarantineRetentionClusterConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(c *node.Config) { c.LogScrubQuarantineRetention = 2 * time.Hour })
	tc.waitAlive(3)
	cl := tc.client(ctx)
	for _, ch := range []struct {
		change client.ConfigChange
		want   time.Duration
	}{
		{client.ConfigChange{Set: map[string]string{"log.scrub.quarantine.retention.ms": "1500"}}, 1500 * time.Millisecond},
		{client.ConfigChange{Set: map[string]string{"log.scrub.quarantine.retention.ms": "0"}}, 0},
		{client.ConfigChange{Delete: []string{"log.scrub.quarantine.retention.ms"}}, 2 * time.Hour},
	} {
		if err := cl.Admin().AlterClusterConfigs(ctx, ch.change); err != nil {
			t.Fatal(err)
		}
		for id := int32(1); id <= 3; id++ {
			waitFor(t, fmt.Sprintf("node %d's quarantine retention %v after %+v", id, ch.want, ch.change), 10*time.Second, func() bool {
				return tc.node(id).Broker().Stats().ScrubQuarantineRetention == ch.want
			})
		}
	}
}
