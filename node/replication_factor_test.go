package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Raising a topic's replication factor while acks=all writes go on: broker
// 4 copies the whole log and joins the ISR, the leader stays. Lowering it
// to 2 removes the last two replicas in preference order (3 and 4), which
// delete their copies. Then the leader is killed: the one replica left
// holds every acknowledged record, and once the leader is back each is read
// back at its offset.
func TestReplicationFactorRaisedAndLowered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc, c := reassignCluster(ctx, t, 4, nil, []int32{1, 2, 3})
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
	if p, _ := tc.image().Partition("payments", 0); !slices.Equal(p.Replicas, []int32{1, 2}) || p.Leader != 1 {
		t.Fatalf("after lowering: %s", p)
	}
	waitFor(t, "nodes 3 and 4 deleted their copies", 15*time.Second, func() bool {
		for _, id := range []int32{3, 4} {
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
	// The leader dies: broker 2 alone holds every acknowledged record. (It
	// leads, but with min ISR 2 its HW waits for broker 1 to be back.)
	tc.kill(1)
	if _, _, end, ok := tc.node(2).Broker().PartitionInfo("payments", 0); !ok || end != total {
		t.Fatalf("node 2's copy ends at %d (open %v), want %d", end, ok, total)
	}
	tc.start(1)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
}
