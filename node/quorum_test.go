package node_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/node"
)

// Adding a controller to --controllers on a fresh node is not supported:
// the node would bootstrap a metadata log of its own and never join. Start
// refuses with an error saying so and what to do instead; the same node
// started with the cluster's --controllers joins as a broker.
func TestFreshNodeAddedToControllersIsRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	waitFor(t, "a controller", 10*time.Second, func() bool { return tc.activeController() != 0 })

	addr4 := freeUDPAddr(t)
	cfg := node.DefaultConfig()
	cfg.ID = 4
	cfg.Addr = addr4
	cfg.DataDir = filepath.Join(tc.dir, "node4")
	cfg.Controllers = maps.Clone(tc.ctrls)
	cfg.Controllers[4] = addr4
	cfg.SegmentBytes = 8 << 20
	cfg.NoRaftSync = true
	cfg.Logger = testLogger(t).With("node", 4)
	n, err := node.Start(ctx, cfg)
	if err == nil {
		n.Kill()
		t.Fatal("node 4 started with a --controllers list the cluster was not created with")
	}
	if !errors.Is(err, node.ErrControllerMembershipChange) {
		t.Fatalf("Start: %v, want ErrControllerMembershipChange", err)
	}
	for _, want := range []string{"not supported", "never join", "start it with the cluster's --controllers list"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Logf("Start refused: %v", err)

	// The advice works: with the cluster's list it joins as a broker.
	tc.addrs[4] = addr4
	tc.start(4)
	tc.waitAlive(4)
}

// A committed metadata entry with a record type this build does not know
// (one written by a newer paymentlog) stops every node with an error that
// says so, instead of letting them skip it while the newer nodes apply it.
func TestUnknownMetadataRecordStopsTheNode(t *testing.T) {
	tc := mustStartClusterWith(t, 3, nil)
	waitFor(t, "a controller", 15*time.Second, func() bool { return tc.activeController() != 0 })
	leader := tc.node(tc.activeController())
	// Record type 99, version 1, an empty msgpack map as its body.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := leader.Raft().Propose(ctx, []byte{99, 1, 0, 0, 0, 1, 0x80}); err != nil {
		t.Fatal(err)
	}
	for id := int32(1); id <= 3; id++ {
		nd := tc.node(id)
		select {
		case <-nd.Done():
		case <-time.After(15 * time.Second):
			t.Fatalf("node %d still runs", id)
		}
		if err := nd.Err(); err == nil || !strings.Contains(err.Error(), "written by a newer paymentlog: upgrade this node") {
			t.Fatalf("node %d stopped with %v", id, err)
		}
	}
}
