package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/node"
)

// A restarted node replays the metadata log from its last snapshot, and
// its watcher may act on any image on the way. One where the node was not
// a replica of a partition it holds again now (moved away and back) must
// not delete the partition's data: by now the copy may be in the ISR or
// the ELR, so the controller may make it the leader, and a copy deleted on
// the way through would come back empty and lose acknowledged records
// (found by a chaos run: a replica removed by a replication factor shrink,
// re-added, caught up, restarted, deleted its log while replaying, then
// was elected from the ELR with a log re-fetched only partly). The test
// moves payments-0 from node 3 to node 4 and back, then holds node 3's
// replay first at an image where it holds payments-0, then
// at one where it does not, and checks the copy is still on disk.
func TestReplayDoesNotDeleteAReplicaGivenBackSince(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc, c := reassignCluster(ctx, t, 4, nil, []int32{1, 2, 3})
	w := newPaymentWriter(t, c, 200)
	w.produce(ctx, 0, 100)
	w.flush(ctx)
	n3 := tc.node(3)
	leo := func() int64 {
		_, _, end, ok := tc.node(3).Broker().PartitionInfo("payments", 0)
		if !ok {
			return -1
		}
		return end
	}
	waitFor(t, "node 3 holds the first 100 records", 15*time.Second, func() bool { return leo() == 100 })
	held := n3.Store().Image().Offset() // an image where node 3 holds payments-0

	moveTo := func(replicas []int32) {
		t.Helper()
		if err := c.Admin().ReassignPartition(ctx, "payments", 0, replicas); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("payments-0 on %v in sync, on node 3 too", replicas), 20*time.Second, func() bool {
			p, ok := n3.Store().Image().Partition("payments", 0)
			return ok && slices.Equal(p.Replicas, replicas) && len(p.ISR) == len(replicas) && !p.Reassigning()
		})
	}
	moveTo([]int32{1, 2, 4})
	waitFor(t, "node 3 stopped payments-0", 15*time.Second, func() bool { return leo() == -1 })
	removed := n3.Store().Image().Offset() // an image where it does not
	moveTo([]int32{1, 2, 3})
	w.produce(ctx, 100, 200)
	w.flush(ctx)
	waitFor(t, "node 3 holds all 200 records again", 15*time.Second, func() bool { return leo() == 200 })

	// Restart node 3, holding its replay just after each of the two images.
	type gate struct {
		reached, release chan struct{}
		once             sync.Once
	}
	gates := map[uint64]*gate{held + 1: {reached: make(chan struct{}), release: make(chan struct{})},
		removed + 1: {reached: make(chan struct{}), release: make(chan struct{})}}
	tc.configure = func(cfg *node.Config) {
		if cfg.ID != 3 {
			return
		}
		node.SetApplyGate(cfg, func(index uint64) {
			if g := gates[index]; g != nil {
				g.once.Do(func() {
					close(g.reached)
					<-g.release
				})
			}
		})
	}
	t.Cleanup(func() { // a failure must not leave node 3's replay held: stopping it waits for the replay
		for _, g := range gates {
			select {
			case <-g.release:
			default:
				close(g.release)
			}
		}
	})
	tc.kill(3)
	tc.start(3)
	reach := func(what string, g *gate) {
		t.Helper()
		select {
		case <-g.reached:
		case <-time.After(30 * time.Second):
			t.Fatalf("timed out waiting for the replay to reach %s", what)
		}
	}
	reach("the image where node 3 holds payments-0", gates[held+1])
	waitFor(t, "node 3 opened payments-0 at that image", 15*time.Second, func() bool { return leo() >= 0 })
	close(gates[held+1].release)
	reach("the image where node 3 does not hold payments-0", gates[removed+1])
	waitFor(t, "node 3 stopped payments-0 at that image", 15*time.Second, func() bool { return leo() == -1 })
	dir := filepath.Join(tc.dir, "node3", "payments-0")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("replaying an old image deleted node 3's copy of payments-0, which the image at the log's end gives it: %v", err)
	}
	close(gates[removed+1].release)
	waitFor(t, "node 3 back with all 200 records", 20*time.Second, func() bool { return leo() == 200 })
	if got := w.acknowledged(ctx); len(got) != 200 {
		t.Fatalf("%d of 200 records acknowledged", len(got))
	}
}
