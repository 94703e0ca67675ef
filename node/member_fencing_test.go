package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/quic"
	"paymentlog/wire"
)

// A member that keeps heartbeating but never releases the partition it is
// told to give up (its application stopped polling) holds it only until
// its rebalance timeout: the active controller fences it at a tick, the
// waiting member gets the partition, the fenced member's heartbeats and
// commits are answered FencedMemberEpoch, and the controller counts it in
// paymentlog_controller_group_members_removed_total{reason="rebalance"}.
// The members here are raw heartbeats, so the client's own leaving (it
// stops heartbeating when its application stops polling) is out of the
// way.
func TestStalledMemberIsFencedAtItsRebalanceTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		cfg.GroupSessionTimeout, cfg.GroupHeartbeatInterval = 5*time.Second, 100*time.Millisecond
		withMetrics(cfg)
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 2, ReplicationFactor: 3, MinISR: 2})
	ep, err := quic.New(ctx, quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctrl := tc.activeController()
	addr := tc.node(ctrl).Addr()
	heartbeat := func(req wire.GroupHeartbeatRequest) wire.GroupHeartbeatResponse {
		t.Helper()
		var resp wire.GroupHeartbeatResponse
		if err := ep.Call(ctx, addr, wire.TypeGroupHeartbeat, req, &resp); err != nil {
			t.Fatalf("heartbeat to controller %d: %v", ctrl, err)
		}
		if resp.Err == wire.NotController {
			t.Skipf("controller %d lost its role during the test", ctrl)
		}
		return resp
	}
	sub := []string{"payments"}
	a := heartbeat(wire.GroupHeartbeatRequest{Group: "billing", MemberEpoch: wire.JoinEpoch, Topics: sub, RebalanceTimeoutMs: 1500})
	if a.Err != wire.None {
		t.Fatalf("a's join: %v %s", a.Err, a.Message)
	}
	a = heartbeat(wire.GroupHeartbeatRequest{Group: "billing", MemberID: a.MemberID, MemberEpoch: a.MemberEpoch, Owned: a.Assigned})
	if len(a.Assigned) != 1 || len(a.Assigned[0].Partitions) != 2 {
		t.Fatalf("a alone is assigned %+v", a.Assigned)
	}
	owned := a.Assigned // a reports owning both from now on, whatever it is told
	start := time.Now() // before b's join, which starts a's rebalance timeout
	b := heartbeat(wire.GroupHeartbeatRequest{Group: "billing", MemberEpoch: wire.JoinEpoch, Topics: sub})
	var bOwned []wire.GroupPartitions
	waitFor(t, "b to be given a's partition", 20*time.Second, func() bool {
		heartbeat(wire.GroupHeartbeatRequest{Group: "billing", MemberID: a.MemberID, MemberEpoch: a.MemberEpoch, Owned: owned})
		b = heartbeat(wire.GroupHeartbeatRequest{Group: "billing", MemberID: b.MemberID, MemberEpoch: b.MemberEpoch, Owned: bOwned})
		if b.Err != wire.None {
			t.Fatalf("b's heartbeat: %v %s", b.Err, b.Message)
		}
		bOwned = b.Assigned
		time.Sleep(50 * time.Millisecond) // heartbeat pace, not a wait for a condition
		return len(bOwned) > 0
	})
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Fatalf("b was given a's partition after %v, inside a's rebalance timeout", took)
	}
	// b has a partition a reports owning: a must no longer be a member (a
	// tick may have fenced it between a's heartbeat and b's above).
	aLast := heartbeat(wire.GroupHeartbeatRequest{Group: "billing", MemberID: a.MemberID, MemberEpoch: a.MemberEpoch, Owned: owned})
	if aLast.Err != wire.FencedMemberEpoch {
		t.Fatalf("a's heartbeat once fenced: %v %s", aLast.Err, aLast.Message)
	}
	var commit wire.OffsetCommitResponse
	if err := ep.Call(ctx, addr, wire.TypeOffsetCommit, wire.OffsetCommitRequest{Group: "billing", MemberID: a.MemberID,
		Offsets: []wire.GroupOffset{{Topic: "payments", Partition: owned[0].Partitions[0], Offset: 1}}}, &commit); err != nil {
		t.Fatal(err)
	}
	if commit.Err != wire.FencedMemberEpoch {
		t.Fatalf("fenced a's commit: %v %s", commit.Err, commit.Message)
	}
	e := scrape(t, tc.node(ctrl).MetricsAddr())
	if v := value(t, e, "paymentlog_controller_group_members_removed_total", "reason", "rebalance"); v != 1 {
		t.Fatalf("members removed for their rebalance timeout: %v, want 1", v)
	}
}
