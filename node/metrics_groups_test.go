package node_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// A consumer group's lag is exported by each partition's leader, as the
// high watermark minus the group's committed offset: summed over the
// nodes, each partition of each group once; a partition the group never
// committed has no series. The lag in time is how long ago the record at
// the committed offset was written (its timestamp: records stamped an hour
// ago give an hour), and 0 once the group has committed everything.
func TestGroupLagMetricOnTheLeaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, withMetrics)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 2, ReplicationFactor: 3, MinISR: 2})
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	hourAgo := time.Now().Add(-time.Hour)
	for i := range 10 {
		if _, err := p.ProduceSync(ctx, &client.Record{Topic: "payments", Partition: 0, PartitionSet: true, Value: fmt.Appendf(nil, "r%d", i),
			Timestamp: hourAgo.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Admin().CommitOffsets(ctx, "billing", []wire.GroupOffset{{Topic: "payments", Partition: 0, Offset: 3, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	leader := waitLeader(t, tc, "payments", 0)
	var lag, lagSeconds float64
	var series int
	var on int32
	// Only the leader writes it; leadership is not expected to move, but
	// the scrapes are not one instant, so that is checked at the end.
	waitFor(t, "the group's lag, once over the nodes", 15*time.Second, func() bool {
		lag, lagSeconds, series = 0, 0, 0
		for id, addr := range metricsAddrs(tc) {
			e := scrape(t, addr)
			for _, s := range e.Families["paymentlog_group_lag_seconds"].Samples {
				lagSeconds += s.Value
			}
			for _, s := range e.Families["paymentlog_group_lag_messages"].Samples {
				if s.Labels["group"] != "billing" || s.Labels["topic"] != "payments" || s.Labels["partition"] != "0" {
					t.Fatalf("node %d writes %+v", id, s)
				}
				lag += s.Value
				series++
				on = id
			}
		}
		return series == 1 && lag == 7
	})
	// Offset 3 was stamped an hour ago plus 3 s; the scrape came after.
	if want := time.Since(hourAgo.Add(3 * time.Second)).Seconds(); lagSeconds < want-60 || lagSeconds > want+1 {
		t.Fatalf("lag in time %.1f s, want about %.1f s", lagSeconds, want)
	}
	if err := c.Admin().CommitOffsets(ctx, "billing", []wire.GroupOffset{{Topic: "payments", Partition: 0, Offset: 10, LeaderEpoch: -1}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no lag once everything is committed", 15*time.Second, func() bool {
		var msgs, secs float64
		for _, addr := range metricsAddrs(tc) {
			e := scrape(t, addr)
			msgs += e.Sum("paymentlog_group_lag_messages")
			secs += e.Sum("paymentlog_group_lag_seconds")
		}
		return msgs == 0 && secs == 0
	})
	if l := waitLeader(t, tc, "payments", 0); on != l && on != leader {
		t.Fatalf("the lag came from node %d; partition 0 was led by %d, then %d", on, leader, l)
	}
}
