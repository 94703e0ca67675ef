package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"paymentlog/node"
)

// Raising a topic's replication factor while acks=all writes go on: broker
// 4 copies the whole log and joins the ISR, the leader stays. Lowering it
// to 2 removes two replicas (the last in preference order, 3 and 4, unless
// one fell out of the ISR), which delete their copies. Then the leader is killed: the one replica left
// holds every acknowledged record, and once the leader is back each is read
// back at its offset.
func TestReplicationFactorRaisedAndLowered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The long session keeps a leader starved of CPU in a loaded CI run from
	// being fenced (the kill at the end is fenced by the port probe).
	tc, c := reassignCluster(ctx, t, 4, func(cfg *node.Config) { cfg.SessionTimeout = 3 * time.Second }, []int32{1, 2, 3})
	admin := c.Admin()

	const total = 3000
	w := newPaymentWriter(t, c, total)
	w.produce(ctx, 0, 1000)
	w.flush(ctx)
	stop := w.background(ctx, 1000, 2000)
	if err := admin.AlterReplicationFactor(ctx, "payments", 4); err != nil {
		t.Fatal(err)
	}
	if err := admin.WaitReplicationFactor(ctx, "payments", 4, nil); err != nil {
		t.Fatal(err)
	}
	written := stop()
	t.Logf("%d records written while the replication factor went up", written-1000)
	if p, _ := tc.image().Partition("payments", 0); !slices.Equal(p.Replicas, []int32{1, 2, 3, 4}) || len(p.ISR) != 4 || p.Leader != 1 {
		t.Fatalf("after raising: %s", p)
	}
	if tp, _ := tc.image().Topic("payments"); tp.RF != 4 {
		t.Fatalf("topic RF %d after raising", tp.RF)
	}
	w.produce(ctx, written, 2500)
	w.flush(ctx)
	wantWholeCopy(t, tc, 4, 2500)

	if err := admin.AlterReplicationFactor(ctx, "payments", 2); err != nil {
		t.Fatal(err)
	}
	if err := admin.WaitReplicationFactor(ctx, "payments", 2, nil); err != nil {
		t.Fatal(err)
	}
	// The controller drops a replica out of the ISR before the last in
	// preference order (metadata's own tests pin that order down): a node
	// starved of CPU in a loaded CI run may have left the ISR for a moment.
	p, _ := tc.image().Partition("payments", 0)
	if len(p.Replicas) != 2 || p.Replicas[0] != 1 || p.Leader != 1 {
		t.Fatalf("after lowering: %s", p)
	}
	kept := p.Replicas[1]
	if kept != 2 {
		t.Logf("node %d kept instead of node 2, which was out of the ISR: %s", kept, p)
	}
	var removed []int32
	for _, id := range []int32{2, 3, 4} {
		if id != kept {
			removed = append(removed, id)
		}
	}
	waitFor(t, fmt.Sprintf("nodes %v deleted their copies", removed), 15*time.Second, func() bool {
		for _, id := range removed {
			_, err := os.Stat(filepath.Join(tc.dir, fmt.Sprintf("node%d", id), "payments-0"))
			if _, _, _, open := tc.node(id).Broker().PartitionInfo("payments", 0); !os.IsNotExist(err) || open {
				return false
			}
		}
		return true
	})
	w.produce(ctx, 2500, total)
	w.flush(ctx)
	byOffset := w.acknowledged(ctx)
	// The leader dies: the replica kept alone holds every acknowledged
	// record. (It leads, but with min ISR 2 its HW waits for broker 1 to be
	// back.)
	tc.kill(1)
	if _, _, end, ok := tc.node(kept).Broker().PartitionInfo("payments", 0); !ok || end != total {
		t.Fatalf("node %d's copy ends at %d (open %v), want %d", kept, end, ok, total)
	}
	tc.start(1)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
}
