package node_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/wire"
)

// Moving a partition off its leader's broker onto a new broker while
// acks=all writes continue: broker 4 copies the log, joins the ISR, takes
// leadership, and the old broker stops the replica and deletes its copy.
// Then one of the two remaining old replicas is killed, and every record
// acknowledged before, during and after the move is read back at its offset.
func TestReassignMovesPartitionUnderLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Node 4 (broker-only) is the new home; the partition starts on 1-3, led by 1.
	tc, c := reassignCluster(ctx, t, 4, nil, []int32{1, 2, 3})
	admin := c.Admin()

	const total = 3000
	w := newPaymentWriter(t, c, total)
	w.produce(ctx, 0, 1000)
	w.flush(ctx)
	// Writes go on, 50 records at a time, throughout the move.
	stop := w.background(ctx, 1000, 2000)
	if err := admin.ReassignPartition(ctx, "payments", 0, []int32{4, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := admin.WaitReassignment(ctx, "payments", 0, nil); err != nil {
		t.Fatal(err)
	}
	moved := stop()
	t.Logf("%d records written during the move", moved-1000)
	if p, _ := tc.image().Partition("payments", 0); !slices.Equal(p.Replicas, []int32{4, 2, 3}) || p.Leader != 4 || p.Reassigning() {
		t.Fatalf("after the move: %s", p)
	}
	waitFor(t, "node 1 deleted its copy", 15*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(tc.dir, "node1", "payments-0"))
		_, _, _, open := tc.node(1).Broker().PartitionInfo("payments", 0)
		return os.IsNotExist(err) && !open
	})
	w.produce(ctx, moved, 2500)
	w.flush(ctx)
	tc.kill(2)
	w.produce(ctx, 2500, total)
	byOffset := w.acknowledged(ctx)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
	// Node 4 holds the whole log from offset 0 (it copied what was written
	// before it was added).
	wantWholeCopy(t, tc, 4, total)
}

// wantWholeCopy checks that node id holds payments-0 from offset 0 to end.
func wantWholeCopy(t *testing.T, tc *testCluster, id int32, end int64) {
	t.Helper()
	if _, start, got, ok := tc.node(id).Broker().PartitionInfo("payments", 0); !ok || start != 0 || got != end {
		t.Fatalf("node %d's copy: log start %d, end %d, open %v; want 0, %d", id, start, got, ok, end)
	}
}

// reassignCluster starts controllers 1-3 and broker-only nodes 4..last
// (configure, if not nil, applied to every node), creates payments (one
// partition, RF 3, min ISR 2) and, when place is not nil, moves it onto
// place and waits until all of place is in sync and place[0] leads.
func reassignCluster(ctx context.Context, t *testing.T, last int32, configure func(*node.Config), place []int32) (*testCluster, *client.Client) {
	t.Helper()
	tc := mustStartClusterWith(t, 3, configure)
	waitFor(t, "a controller", 15*time.Second, func() bool { return tc.activeController() != 0 })
	for id := int32(4); id <= last; id++ {
		tc.start(id)
	}
	tc.waitAlive(int(last))
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	if place == nil {
		return tc, c
	}
	if err := c.Admin().ReassignPartition(ctx, "payments", 0, place); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("payments-0 on %v, in sync, led by %d", place, place[0]), 15*time.Second, func() bool {
		p, ok := tc.image().Partition("payments", 0)
		return ok && p.Leader == place[0] && slices.Equal(p.Replicas, place) && len(p.ISR) == len(place)
	})
	return tc, c
}

// The use a reassignment is for: a broker dies, its replicas move to a new
// broker, and nothing acknowledged is lost. When the dead broker comes back,
// its copy (no longer assigned to it) is deleted once it is unfenced,
// instead of holding its disk forever — here even though it never applies
// the change that removed its replica: its metadata log was lost with it,
// and it catches up from a snapshot taken after the move (small snapshot
// spacing), so its image never assigns it the partition.
func TestReassignAwayFromDeadBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Broker-only nodes: 4 dies, 5 replaces it.
	tc, c := reassignCluster(ctx, t, 5, func(cfg *node.Config) {
		cfg.MetadataSnapshotEvery, cfg.MetadataCatchUpEntries = 8, 1
	}, []int32{1, 2, 4})
	admin := c.Admin()
	const total = 1000
	w := newPaymentWriter(t, c, total)
	w.produce(ctx, 0, 500)
	w.flush(ctx)
	copy4 := filepath.Join(tc.dir, "node4", "payments-0")
	if _, err := os.Stat(copy4); err != nil {
		t.Fatalf("node 4's copy: %v", err)
	}
	tc.kill(4)
	if err := os.RemoveAll(filepath.Join(tc.dir, "node4", node.MetadataDirName)); err != nil {
		t.Fatal(err)
	}
	if err := admin.ReassignPartition(ctx, "payments", 0, []int32{1, 2, 5}); err != nil {
		t.Fatal(err)
	}
	if err := admin.WaitReassignment(ctx, "payments", 0, nil); err != nil {
		t.Fatal(err)
	}
	w.produce(ctx, 500, total)
	w.flush(ctx)
	// Enough metadata entries for a snapshot past the move.
	for i := range 4 {
		createTopic(ctx, t, tc, c, client.TopicSpec{Name: fmt.Sprintf("filler%d", i), Partitions: 1, ReplicationFactor: 2, MinISR: 1})
	}
	tc.start(4)
	waitFor(t, "node 4 unfenced and its copy removed", 30*time.Second, func() bool {
		b, ok := tc.image().Broker(4)
		_, err := os.Stat(copy4)
		return ok && !b.Fenced && os.IsNotExist(err)
	})
	byOffset := w.acknowledged(ctx)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
	wantWholeCopy(t, tc, 5, total)
}

// Reassignments mixed with crashes while acks=all writes go on: every round
// restarts the node killed in the round before, moves one random replica of
// the partition to a broker that holds none (or, one round in three,
// changes the replication factor to 2, 3 or 4), and kills a random node
// while the copy is under way (the leader, the replica being added, one
// being removed, the active controller: whichever comes). The moves all
// complete once the killed node is back, and every acknowledged record is
// read back at its offset.
func TestReassignWithCrashesRandomized(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 13))
	tc, c := reassignCluster(ctx, t, 4, nil, nil)
	admin := c.Admin()

	const total = 6000
	w := newPaymentWriter(t, c, total)
	stop := w.background(ctx, 0, total-500)
	dead := int32(0)
	for round := range 5 {
		if dead != 0 {
			tc.start(dead)
			dead = 0
		}
		tc.waitAlive(4)
		p, ok := tc.image().Partition("payments", 0)
		if !ok {
			t.Fatal("payments-0 missing")
		}
		if rng.IntN(3) == 0 {
			// Change the replication factor instead: 2, 3 or 4 (min ISR 2).
			rf := int32(2 + rng.IntN(3))
			// A raise needs the restarted node live, and waitAlive may
			// have counted its previous incarnation, still unfenced
			// then: retry while too few brokers are live.
			var err error
			waitFor(t, fmt.Sprintf("round %d: replication factor %d accepted", round, rf), 15*time.Second, func() bool {
				err = admin.AlterReplicationFactor(ctx, "payments", rf)
				return client.ErrorCode(err) != wire.InvalidReplicationFactor
			})
			if err != nil {
				t.Fatalf("round %d: replication factor %d: %v", round, rf, err)
			}
			dead = int32(1 + rng.IntN(4))
			tc.kill(dead)
			t.Logf("round %d: %v -> replication factor %d, killed %d", round, p.Replicas, rf, dead)
			continue
		}
		target := slices.Clone(p.Target())
		var spare int32
		for id := int32(1); id <= 4; id++ {
			if !slices.Contains(target, id) {
				spare = id
			}
		}
		if spare == 0 { // four replicas: reorder them instead
			spare = target[0]
			target = append(target[1:], spare)
		} else {
			moved := target[rng.IntN(len(target))]
			target[slices.Index(target, moved)] = spare
		}
		if err := admin.ReassignPartition(ctx, "payments", 0, target); err != nil {
			t.Fatalf("round %d: reassign %v: %v", round, target, err)
		}
		dead = int32(1 + rng.IntN(4))
		tc.kill(dead)
		t.Logf("round %d: %v -> %v, killed %d", round, p.Replicas, target, dead)
	}
	tc.start(dead)
	wctx, wcancel := context.WithTimeout(ctx, 60*time.Second)
	defer wcancel()
	if err := admin.WaitReassignment(wctx, "payments", 0, nil); err != nil {
		t.Fatalf("the last reassignment did not complete: %v (%s)", err, tc.image())
	}
	w.produce(ctx, stop(), total)
	byOffset := w.acknowledged(ctx)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
	p, _ := tc.image().Partition("payments", 0)
	t.Logf("final %s; %d records", p, len(byOffset))
}

// --reassignment-throttle holds the copy for a replica being added to its
// rate (plus a second's worth, plus one fetch answer, 256 KiB here): 4 MiB
// at 1 MiB/s takes at least 4-1-0.25 = 2.75 s, where unthrottled it takes a
// fraction of a second. A lower bound only: a slow machine makes it
// slower, never faster.
func TestReassignThrottled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const rate = 1 << 20
	tc, c := reassignCluster(ctx, t, 4, func(cfg *node.Config) {
		cfg.ReassignmentThrottle, cfg.ReplicaFetchMaxBytes = rate, 256<<10
	}, []int32{1, 2, 3})
	admin := c.Admin()
	const total = 4 << 10
	produceKiB(ctx, t, c, total)
	start := time.Now()
	if err := admin.ReassignPartition(ctx, "payments", 0, []int32{1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	if err := admin.WaitReassignment(ctx, "payments", 0, nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	copied := tc.node(4).Broker().Stats().ReassignCopyBytes
	t.Logf("copied %d bytes in %v (%.1f MB/s, throttle %d B/s)", copied, took, float64(copied)/took.Seconds()/1e6, rate)
	if copied < total*1024 {
		t.Fatalf("node 4 counted %d bytes copied, want at least %d", copied, total*1024)
	}
	if took < 2750*time.Millisecond {
		t.Fatalf("a copy of %d bytes at %d B/s took %v, want at least 2.75s", copied, rate, took)
	}
}

// The cluster's reassignment.throttle.bytes, set while the nodes run, holds
// a copy to its rate like --reassignment-throttle (here 1 MiB/s on nodes
// started unthrottled), every node reports it, and deleting it brings each
// node back to its own flag.
func TestReassignThrottledByClusterConfig(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const rate = 1 << 20
	tc, c := reassignCluster(ctx, t, 4, func(cfg *node.Config) { cfg.ReplicaFetchMaxBytes = 256 << 10 }, []int32{1, 2, 3})
	admin := c.Admin()
	produceKiB(ctx, t, c, 4<<10)
	if err := admin.AlterClusterConfigs(ctx, client.ConfigChange{Set: map[string]string{"reassignment.throttle.bytes": fmt.Sprint(rate)}}); err != nil {
		t.Fatal(err)
	}
	// The change is committed on the controller; each node applies it
	// from its copy of the metadata log a moment later.
	for id := int32(1); id <= 4; id++ {
		waitFor(t, fmt.Sprintf("node %d's throttle %d", id, rate), 10*time.Second, func() bool {
			return tc.node(id).Broker().Stats().ReassignThrottle == rate
		})
	}
	start := time.Now()
	if err := admin.ReassignPartition(ctx, "payments", 0, []int32{1, 2, 4}); err != nil {
		t.Fatal(err)
	}
	if err := admin.WaitReassignment(ctx, "payments", 0, nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	copied := tc.node(4).Broker().Stats().ReassignCopyBytes
	t.Logf("copied %d bytes in %v (%.1f MB/s, throttle %d B/s)", copied, took, float64(copied)/took.Seconds()/1e6, rate)
	if took < 2750*time.Millisecond {
		t.Fatalf("a copy of %d bytes at %d B/s took %v, want at least 2.75s", copied, rate, took)
	}
	if err := admin.AlterClusterConfigs(ctx, client.ConfigChange{Delete: []string{"reassignment.throttle.bytes"}}); err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= 4; id++ {
		waitFor(t, fmt.Sprintf("node %d's throttle 0 after the delete (its flag)", id), 10*time.Second, func() bool {
			return tc.node(id).Broker().Stats().ReassignThrottle == 0
		})
	}
}

// produceKiB writes n records of 1 KiB to payments-0 and flushes them.
func produceKiB(ctx context.Context, t *testing.T, c *client.Client, n int) {
	t.Helper()
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	value := make([]byte, 1024)
	for i := range n {
		if err := p.Produce(ctx, &client.Record{Topic: "payments", Partition: 0, Value: value}, nil); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
