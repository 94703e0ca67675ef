package controller

import (
	"testing"

	"paymentlog/node/metadata"
)

// Cluster counts offline (no leader), under-min-ISR, under-replicated and
// reassigning partitions, and fenced brokers, from the image.
func TestClusterStats(t *testing.T) {
	recs := []metadata.Record{
		metadata.BrokerRegistered{ID: 1, Incarnation: 1, Addr: "a"},
		metadata.BrokerUnfenced{ID: 1, Incarnation: 1},
		metadata.BrokerRegistered{ID: 2, Incarnation: 1, Addr: "b"},
		metadata.BrokerUnfenced{ID: 2, Incarnation: 1},
		metadata.BrokerRegistered{ID: 3, Incarnation: 1, Addr: "c"}, // fenced until unfenced
		metadata.TopicCreated{Name: "pay", ID: "t1", Partitions: 3, RF: 3, MinISR: 2},
		metadata.PartitionCreated{Topic: "pay", TopicID: "t1", Partition: 0, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, Leader: 1},
		metadata.PartitionCreated{Topic: "pay", TopicID: "t1", Partition: 1, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 1}, Leader: 2},
		metadata.PartitionCreated{Topic: "pay", TopicID: "t1", Partition: 2, Replicas: []int32{3, 1, 2}, ISR: []int32{3}, Leader: metadata.NoLeader},
		metadata.TopicCreated{Name: "log", ID: "t2", Partitions: 1, RF: 1, MinISR: 1},
		metadata.PartitionCreated{Topic: "log", TopicID: "t2", Partition: 0, Replicas: []int32{1}, ISR: []int32{1}, Leader: 1},
		// Being moved from 1 to 2: 2 is not in sync yet, which is not
		// under-replication.
		metadata.PartitionChange{Topic: "log", TopicID: "t2", Partition: 0, Replicas: []int32{2, 1}, ISR: []int32{1}, Leader: 1,
			PartitionEpoch: 1, Adding: []int32{2}, Removing: []int32{1}},
	}
	img, _, err := metadata.EmptyImage().ApplyEntry(1, recs)
	if err != nil {
		t.Fatal(err)
	}
	got := Cluster(img)
	want := ClusterStats{Brokers: 3, FencedBrokers: 1, Topics: 2, Partitions: 4,
		OfflinePartitions: 1, UnderMinISRPartitions: 1, UnderReplicatedPartitions: 2, ReassigningPartitions: 1}
	if got != want {
		t.Fatalf("Cluster = %+v\nwant      %+v", got, want)
	}
}
