package node_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/segment"
)

// TestLeaderStorageFailureMovesLeadership: a failed fsync on a partition
// leader stops its node (Done, naming the partition). Once it has shut down
// as `paymentlog node start` does on Done, writes resume on an in-sync
// replica, every record is acknowledged once, and each acknowledged record
// is read back at its offset.
func TestLeaderStorageFailureMovesLeadership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const total = 400
	tc, fss, w, leader := halfWrittenOnMemFS(ctx, t, total)
	fss[leader].SetFault(func(op segment.FaultOp, path string) error {
		if op == segment.OpSync && strings.HasSuffix(path, ".log") {
			return syscall.EIO
		}
		return nil
	})
	w.produce(ctx, total/2, total)

	failed := tc.node(leader)
	select {
	case <-failed.Done():
	case <-ctx.Done():
		t.Fatalf("node %d kept running with a failed partition log", leader)
	}
	if err := failed.Err(); err == nil || !strings.Contains(err.Error(), "payments-0") {
		t.Fatalf("node %d stopped with %v, want the failed partition log named", leader, err)
	}
	tc.mu.Lock()
	delete(tc.nodes, leader)
	tc.mu.Unlock()
	if err := failed.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	byOffset := w.acknowledged(ctx)
	now, _ := tc.image().Partition("payments", 0)
	if now.Leader == leader {
		t.Fatalf("node %d still leads after stopping", leader)
	}
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
	t.Logf("node %d stopped (%v); node %d leads; %d records acknowledged once each", leader, failed.Err(), now.Leader, total)
}

// halfWrittenOnMemFS starts three nodes, each on its own in-memory file
// system, creates "payments" (1 partition, RF 3, min ISR 2) and writes the
// first half of total payments through w; it returns the partition's
// leader, whose file system the caller then breaks.
func halfWrittenOnMemFS(ctx context.Context, t *testing.T, total int) (*testCluster, map[int32]*segment.MemFS, *paymentWriter, int32) {
	t.Helper()
	fss := map[int32]*segment.MemFS{1: segment.NewMemFS(), 2: segment.NewMemFS(), 3: segment.NewMemFS()}
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) { cfg.LogFS = fss[cfg.ID] })
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	w := newPaymentWriter(t, c, total)
	w.produce(ctx, 0, total/2)
	w.flush(ctx)
	return tc, fss, w, waitLeader(t, tc, "payments", 0)
}
