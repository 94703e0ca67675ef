package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/client"
)

// DeleteRecords on a 3-node cluster: the leader answers with its new log
// start, and every in-sync follower drops the records too at its next
// fetch, also on a partition no longer written (WaitReplicasLogStart).
func TestDeleteRecordsReachesEveryReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	produceKiB(ctx, t, c, 20)
	starts, err := c.Admin().DeleteRecords(ctx, "payments", map[int32]int64{0: 12})
	if err != nil || starts[0] != 12 {
		t.Fatalf("DeleteRecords: %v, %v", starts, err)
	}
	start := time.Now()
	isr, behind, err := c.Admin().WaitReplicasLogStart(ctx, "payments", starts)
	if err != nil || len(isr[0]) != 3 || len(behind) != 0 {
		t.Fatalf("waiting for the replicas: ISR %v, behind %v, %v", isr, behind, err)
	}
	t.Logf("every in-sync replica at log start 12 within %v", time.Since(start))
	d, err := c.Admin().DescribeTopicReplicas(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	for _, rs := range d.Partitions[0].ReplicaStates {
		if rs.LogStart != 12 || rs.LogEnd != 20 {
			t.Fatalf("replica %d: log [%d, %d), want [12, 20)", rs.Broker, rs.LogStart, rs.LogEnd)
		}
	}
}
