package node_test

import (
	"context"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// TestRackAwarePlacement: four nodes in two zones (--rack). The racks reach
// the cluster status; a topic's partitions each get a replica in both
// zones, and so do the partitions added later and the replicas a higher
// replication factor adds.
func TestRackAwarePlacement(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	zone := map[int32]string{1: "z1", 2: "z2", 3: "z1", 4: "z2"}
	tc := mustStartClusterWith(t, 4, func(c *node.Config) { c.Rack = zone[c.ID] })
	tc.waitAlive(4)
	c := tc.client(ctx)
	st, err := c.Admin().DescribeCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range st.Nodes {
		if n.Rack != zone[n.ID] {
			t.Fatalf("cluster status: node %d rack %q, want %q", n.ID, n.Rack, zone[n.ID])
		}
	}
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 6, ReplicationFactor: 2, MinISR: 1})
	if err := c.Admin().CreatePartitions(ctx, "payments", 10); err != nil {
		t.Fatal(err)
	}
	check := func(what string, rf int) {
		t.Helper()
		var d client.TopicDescription
		waitFor(t, what, 15*time.Second, func() bool {
			d, err = c.Admin().DescribeTopic(ctx, "payments")
			if err != nil || len(d.Partitions) != 10 {
				return false
			}
			for _, p := range d.Partitions {
				if len(p.Replicas) != rf || len(p.AddingReplicas) > 0 {
					return false
				}
			}
			return true
		})
		leaders := map[string]int{}
		for _, p := range d.Partitions {
			zones := map[string]bool{}
			for _, r := range p.Replicas {
				zones[zone[r]] = true
			}
			if len(zones) != 2 {
				t.Fatalf("%s: partition %d has replicas %v, all in %v", what, p.Partition, p.Replicas, zones)
			}
			leaders[zone[p.Replicas[0]]]++
		}
		if leaders["z1"] != 5 || leaders["z2"] != 5 {
			t.Fatalf("%s: preferred leaders per zone %v, want 5 and 5", what, leaders)
		}
	}
	check("10 partitions of RF 2", 2)
	if err := c.Admin().AlterReplicationFactor(ctx, "payments", 3); err != nil {
		t.Fatal(err)
	}
	check("10 partitions of RF 3", 3)
}
