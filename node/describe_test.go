package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/quic"
	"paymentlog/wire"
)

// A broker-only node is a raft learner: it never campaigns, so after every
// controller died it still names the last raft leader it heard from, and its
// image (frozen: only a controller fences) still says every node is alive.
// DescribeCluster must then say the controller is unknown (-1), which is
// what tells `cluster status` that the states are stale.
func TestDescribeClusterWithoutControllerSaysUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	waitFor(t, "a controller", 10*time.Second, func() bool { return tc.activeController() != 0 })
	tc.start(4) // not in --controllers: a broker-only learner
	tc.waitAlive(4)
	ep, err := quic.New(ctx, quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	addr4 := tc.node(4).Addr()
	describe := func() wire.DescribeClusterResponse {
		t.Helper()
		var resp wire.DescribeClusterResponse
		if err := ep.Call(ctx, addr4, wire.TypeDescribeCluster, wire.DescribeClusterRequest{}, &resp); err != nil {
			t.Fatalf("DescribeCluster at node 4: %v", err)
		}
		return resp
	}
	waitFor(t, "node 4 to name the active controller", 15*time.Second, func() bool {
		return describe().ControllerID > 0
	})

	for id := int32(1); id <= 3; id++ {
		tc.kill(id)
	}
	// A learner's raft state keeps naming the dead leader.
	t.Logf("node 4's raft names leader %d", tc.node(4).Raft().Status().Leader)
	var last wire.DescribeClusterResponse
	waitFor(t, "node 4 to report no active controller", 15*time.Second, func() bool {
		last = describe()
		return last.ControllerID == -1
	})
	if len(last.Brokers) != 4 {
		t.Fatalf("DescribeCluster lists %d nodes, want the 4 of the last image", len(last.Brokers))
	}
	// It stays unknown: nothing answers node 4's heartbeats.
	if got := describe().ControllerID; got != -1 {
		t.Fatalf("controller %d reported with every controller dead", got)
	}
}
