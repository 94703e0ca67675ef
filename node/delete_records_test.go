package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/client"
)

// DeleteRecords on a 3-node cluster: the leader answers once every
// in-sync replica has dropped the records (each does at its next fetch),
// also on a partition no longer written; with LeadersOnly it answers with
// its own new log start, and WaitReplicasLogStart waits for the others.
func TestDeleteRecordsReachesEveryReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	produceKiB(ctx, t, c, 20)
	replicasAt := func(want int64) {
		t.Helper()
		d, err := c.Admin().DescribeTopicReplicas(ctx, "payments")
		if err != nil {
			t.Fatal(err)
		}
		for _, rs := range d.Partitions[0].ReplicaStates {
			if rs.LogStart != want || rs.LogEnd != 20 {
				t.Fatalf("replica %d: log [%d, %d), want [%d, 20)", rs.Broker, rs.LogStart, rs.LogEnd, want)
			}
		}
	}
	start := time.Now()
	lows, err := c.Admin().DeleteRecords(ctx, "payments", map[int32]int64{0: 12})
	if err != nil || lows[0] != 12 {
		t.Fatalf("DeleteRecords: %v, %v", lows, err)
	}
	t.Logf("every in-sync replica at log start 12 within %v", time.Since(start))
	replicasAt(12)

	starts, err := c.Admin().DeleteRecords(ctx, "payments", map[int32]int64{0: 15}, client.LeadersOnly)
	if err != nil || starts[0] != 15 {
		t.Fatalf("DeleteRecords on the leader: %v, %v", starts, err)
	}
	isr, behind, err := c.Admin().WaitReplicasLogStart(ctx, "payments", starts)
	if err != nil || len(isr[0]) != 3 || len(behind) != 0 {
		t.Fatalf("waiting for the replicas: ISR %v, behind %v, %v", isr, behind, err)
	}
	replicasAt(15)
}
