package node_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node"
	"paymentlog/segment"
)

// TestControllerDiskStallHandsOffLeadership: the partition log flushes of
// a node that leads payments-0 and is also the active controller hang.
// Besides stepping aside as a broker it hands the controller's raft
// leadership to another voter: its metadata log is healthy here, so its
// raft loop never blocks, and without the hand-off it would stay the
// active controller for the whole stall (the other voters hear its raft
// heartbeats) while fencing itself.
func TestControllerDiskStallHandsOffLeadership(t *testing.T) {
	var stalled atomic.Int32
	var movedOff atomic.Bool
	runDiskStall(t, func(ctx context.Context, t *testing.T, s *stallCluster) func(op segment.FaultOp, path string) bool {
		s.stalled = s.leader
		if a := s.tc.activeController(); a != s.stalled {
			if err := s.tc.node(a).Raft().TransferLeadership(ctx, uint64(s.stalled)); err != nil {
				t.Fatalf("moving the active controller onto node %d: %v", s.stalled, err)
			}
			waitFor(t, "the leader the active controller", 15*time.Second, func() bool {
				return s.tc.activeController() == s.stalled
			})
		}
		stalled.Store(s.stalled)
		go func() {
			// Watched while the stall lasts (it ends when the test
			// releases it, after the leadership checks).
			for ctx.Err() == nil && !movedOff.Load() {
				if a := s.tc.activeController(); a != 0 && a != stalled.Load() {
					movedOff.Store(true)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		return func(op segment.FaultOp, path string) bool {
			return op == segment.OpSync && strings.HasSuffix(path, ".log") && !strings.Contains(path, node.MetadataDirName)
		}
	}, "", nil)
	if !movedOff.Load() {
		t.Fatalf("node %d, the active controller, kept the controller's leadership through its disk stall", stalled.Load())
	}
}
