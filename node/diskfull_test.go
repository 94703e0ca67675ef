package node_test

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestLeaderDiskFullMovesLeadership: a partition leader's disk fills. It
// does not stop; it holds back its heartbeats, so the controller fences it
// and an in-sync replica takes over: every record is acknowledged once
// and read back at its offset. Once there is room it is unfenced, catches
// up and rejoins the ISR.
func TestLeaderDiskFullMovesLeadership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const total = 400
	tc, fss, w, leader := halfWrittenOnMemFS(ctx, t, total)
	// Capacity 0, not Used(): no allocation may grow from now on, even
	// after a file is freed. With Used(), any bytes freed after that
	// instant (a checkpoint's temporary file counted then and replaced by
	// its rename, for one) were room the appends could take: CI once saw
	// all 200 records acknowledged.
	fss[leader].SetCapacity(0)
	w.produce(ctx, total/2, total)
	// Without the leadership moving, nothing more is acknowledged.
	actx, acancel := context.WithTimeout(ctx, 20*time.Second)
	byOffset := w.acknowledged(actx)
	acancel()

	full := tc.node(leader)
	select {
	case <-full.Done():
		t.Fatalf("node %d stopped on a full disk: %v", leader, full.Err())
	default:
	}
	now, _ := tc.image().Partition("payments", 0)
	if now.Leader == leader || slices.Contains(now.ISR, leader) {
		t.Fatalf("node %d, whose disk is full, still leads or is in the ISR: leader %d isr %v", leader, now.Leader, now.ISR)
	}
	readBackPayments(ctx, t, tc.client(ctx), byOffset)

	fss[leader].SetCapacity(-1)
	waitFor(t, "the node back in the ISR", 30*time.Second, func() bool {
		p, _ := tc.image().Partition("payments", 0)
		return slices.Contains(p.ISR, leader)
	})
}
