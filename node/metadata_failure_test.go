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

// TestMetadataLogFailureStopsNode: a failed fsync of the metadata log stops
// the raft node; the node must then stop too (Done, naming the metadata
// log), as it does for a failed partition log. It used to run on with a
// frozen metadata image, heartbeating (so never fenced) and, as the former
// raft leader, naming itself as the controller to everyone.
func TestMetadataLogFailureStopsNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fs := segment.NewMemFS()
	tc := mustStartClusterWith(t, 1, func(cfg *node.Config) {
		cfg.MetadataFS = fs
		cfg.NoRaftSync = false // the fault is on fsync
	})
	tc.waitAlive(1)
	fs.SetFault(func(op segment.FaultOp, path string) error {
		if op == segment.OpSync && strings.Contains(path, node.MetadataDirName) {
			return syscall.EIO
		}
		return nil
	})
	// Any committed decision appends to the metadata log and syncs it.
	c := tc.client(ctx)
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	_, _ = c.Admin().CreateTopic(cctx, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 1, MinISR: 1})
	ccancel()

	n := tc.node(1)
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("node kept running after its metadata log failed")
	}
	if err := n.Err(); err == nil || !strings.Contains(err.Error(), "metadata log") {
		t.Fatalf("node stopped with %v, want the metadata log named", err)
	}
}
