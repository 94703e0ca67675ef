package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"paymentlog/bench/chaos"
	"paymentlog/node"
)

// A replica in the ELR (KIP-966: it left an ISR that went below min ISR,
// holding every acknowledged record) that restarts and finds its log's
// tail damaged (a batch failing its CRC, here acknowledged records
// overwritten on disk) truncates that tail and names the partition in its
// registration (TornReplicas): it may no longer hold what was acknowledged,
// so the controller takes it out of the ELR. A chaos run (seed 28004)
// elected such a replica from the ELR under --fsync always and lost an
// acknowledged record: the registration did not say, and a restart under
// --fsync always kept the ELR.
func TestTornReplicaLeavesTheELR(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The followers are broker-only nodes: killing both leaves the
	// controllers their quorum. Their kills are fenced by the port probe
	// (the in-process kill closes their sockets); the long session keeps
	// a leader starved of CPU in a loaded CI run from being fenced between
	// the kills, which would leave the second follower the ISR's last
	// member instead of an ELR one.
	tc, c := reassignCluster(ctx, t, 5, func(cfg *node.Config) { cfg.SessionTimeout = 3 * time.Second }, []int32{1, 4, 5})
	w := newPaymentWriter(t, c, 100)
	w.produce(ctx, 0, 100)
	w.flush(ctx)
	p, _ := tc.image().Partition("payments", 0)
	var followers []int32
	for _, r := range p.Replicas {
		if r != p.Leader {
			followers = append(followers, r)
		}
	}
	waitFor(t, "every replica holds the 100 records", 15*time.Second, func() bool {
		for _, id := range p.Replicas {
			if _, _, end, ok := tc.node(id).Broker().PartitionInfo("payments", 0); !ok || end != 100 {
				return false
			}
		}
		return true
	})
	leader := tc.node(p.Leader)
	partition := func() string {
		q, _ := leader.Store().Image().Partition("payments", 0)
		return q.String()
	}
	f1, f2 := followers[0], followers[1]
	tc.kill(f1)
	waitFor(t, fmt.Sprintf("node %d out of the ISR", f1), 15*time.Second, func() bool {
		q, _ := leader.Store().Image().Partition("payments", 0)
		return !q.InISR(f1)
	})
	tc.kill(f2)
	waitFor(t, fmt.Sprintf("node %d in the ELR", f2), 15*time.Second, func() bool {
		q, _ := leader.Store().Image().Partition("payments", 0)
		return q.InELR(f2) && !q.InISR(f2)
	})
	// The in-process kill closes the logs; a crash would not have: the
	// restart must scan the log and find the damage.
	dir := filepath.Join(tc.dir, fmt.Sprintf("node%d", f2), "payments-0")
	if err := os.Remove(filepath.Join(dir, ".clean-shutdown")); err != nil {
		t.Fatal(err)
	}
	res, err := chaos.ApplyTorn(dir, chaos.Torn{Mode: chaos.TornOverwrite, Len: 18, Seed: 7}, 0)
	if err != nil || !res.Applied() {
		t.Fatalf("damaging node %d's tail: %v (%s)", f2, err, res)
	}
	n := tc.start(f2)
	waitFor(t, fmt.Sprintf("node %d registered again", f2), 20*time.Second, func() bool {
		b, ok := leader.Store().Image().Broker(f2)
		return ok && b.Incarnation == n.Incarnation()
	})
	if q, _ := leader.Store().Image().Partition("payments", 0); slices.Contains(q.ELR, f2) {
		t.Fatalf("node %d restarted with its tail of payments-0 damaged (%s) and stayed in the ELR: %s", f2, res, partition())
	}
}
