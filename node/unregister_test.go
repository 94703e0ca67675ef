package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

// Decommissioning broker 4: it cannot be unregistered while it runs, nor
// while it holds a replica (its copy may be needed); once it is stopped
// and its replica moved, it is removed from every node's image and from
// the raft learners, and a second attempt finds it gone. Started again, it
// registers as a broker new to the cluster, catches up on the metadata log
// (through the removal of its own learner) and deletes its stale copy;
// every acknowledged record is still read back.
func TestUnregisterDecommissionedBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc, c := reassignCluster(ctx, t, 4, nil, []int32{1, 2, 4})
	admin := c.Admin()
	const total = 600
	w := newPaymentWriter(t, c, total)
	w.produce(ctx, 0, 300)
	w.flush(ctx)

	refused := func(code wire.ErrorCode, msg string) {
		t.Helper()
		err := admin.UnregisterBroker(ctx, 4)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != code || !strings.Contains(we.Message, msg) {
			t.Fatalf("unregister broker 4: %v, want %v saying %q", err, code, msg)
		}
	}
	refused(wire.InvalidRequest, "is alive")
	tc.kill(4)
	waitFor(t, "broker 4 fenced", 15*time.Second, func() bool {
		b, ok := tc.image().Broker(4)
		return ok && b.Fenced
	})
	refused(wire.InvalidRequest, "still holds replicas of 1 partitions (payments-0)")
	if err := admin.ReassignPartition(ctx, "payments", 0, []int32{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "payments-0 on 1,2,3 in sync", 20*time.Second, func() bool {
		p, _ := tc.image().Partition("payments", 0)
		return slices.Equal(p.Replicas, []int32{1, 2, 3}) && len(p.ISR) == 3
	})
	w.produce(ctx, 300, 450)
	w.flush(ctx)

	if err := admin.UnregisterBroker(ctx, 4); err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.running() {
		if _, ok := n.Store().Image().Broker(4); ok {
			t.Fatalf("node %d still has broker 4 registered after UnregisterBroker returned", n.ID())
		}
	}
	st, err := admin.DescribeCluster(ctx)
	if err != nil || len(st.Nodes) != 3 {
		t.Fatalf("cluster status after unregistering: %+v, %v", st, err)
	}
	waitFor(t, "broker 4 no raft learner", 15*time.Second, func() bool {
		a := tc.activeController()
		return a != 0 && !slices.Contains(tc.node(a).Raft().Status().Learners, 4)
	})
	refused(wire.BrokerNotRegistered, "broker 4 is not registered")
	if v := tc.image().Version(); v != 3 {
		t.Fatalf("metadata version %d after an unregistration, want 3", v)
	}

	// Back after all: a new broker to the cluster, with a stale copy.
	tc.start(4)
	waitFor(t, "broker 4 registered anew, alive, a learner caught up, its stale copy gone", 30*time.Second, func() bool {
		a := tc.activeController()
		if a == 0 {
			return false
		}
		b, ok := tc.node(a).Store().Image().Broker(4)
		_, err := os.Stat(filepath.Join(tc.dir, "node4", "payments-0"))
		return ok && !b.Fenced && slices.Contains(tc.node(a).Raft().Status().Learners, 4) &&
			tc.converged() && os.IsNotExist(err)
	})
	w.produce(ctx, 450, total)
	w.flush(ctx)
	readBackPayments(ctx, t, tc.client(ctx), w.acknowledged(ctx))
	t.Logf("%d records read back", total)
}
