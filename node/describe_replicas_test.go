package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/client"
)

// `topic describe --replicas` (Admin.DescribeTopicReplicas) on real nodes:
// every replica answers with the same log end and size once in sync, one of
// them leads (the metadata's leader), lags are 0; a killed follower is
// listed with its error and the others still answer.
func TestDescribeTopicReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc, c := reassignCluster(ctx, t, 3, nil, nil)
	w := newPaymentWriter(t, c, 200)
	w.produce(ctx, 0, 200)
	w.flush(ctx)
	admin := c.Admin()
	var d client.TopicDescription
	waitFor(t, "every replica at the leader's log end", 15*time.Second, func() bool {
		var err error
		if d, err = admin.DescribeTopicReplicas(ctx, "payments"); err != nil || len(d.Partitions) != 1 {
			return false
		}
		rs := d.Partitions[0].ReplicaStates
		if len(rs) != 3 {
			return false
		}
		for _, r := range rs {
			if r.Error != "" || r.Lag != 0 || r.LogEnd != 200 || r.HW != 200 || !r.InISR {
				return false
			}
		}
		return true
	})
	p := d.Partitions[0]
	var follower int32
	for _, r := range p.ReplicaStates {
		if r.Leader != (r.Broker == p.Leader) || r.Size <= 0 || r.Size != p.ReplicaStates[0].Size || r.Segments != 1 || r.LeaderEpoch != p.LeaderEpoch {
			t.Errorf("replica %+v (leader %d, epoch %d)", r, p.Leader, p.LeaderEpoch)
		}
		if !r.Leader {
			follower = r.Broker
		}
	}

	tc.kill(follower)
	d, err := admin.DescribeTopicReplicas(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Partitions[0].ReplicaStates {
		switch {
		case r.Broker == follower && (r.Error == "" || r.Lag != -1):
			t.Errorf("killed follower: %+v; want its error, lag unknown", r)
		case r.Broker != follower && (r.Error != "" || r.Lag != 0):
			t.Errorf("replica %+v", r)
		}
	}
}
