package cli

import (
	"strings"
	"testing"

	"paymentlog/client"
)

// An offline partition whose last in-sync replica lost its storage shows
// an empty ISR naming that replica and what it takes to lead again.
func TestPrintTopicEmptyISR(t *testing.T) {
	var out strings.Builder
	d := client.TopicDescription{Name: "payments", ReplicationFactor: 3, MinISR: 1, Partitions: []client.PartitionInfo{
		{Partition: 0, Leader: -1, LeaderEpoch: 1, Replicas: []int32{2, 3, 1}, ISR: []int32{}, LostReplicas: []int32{2},
			HighWatermark: -1, LogStartOffset: -1},
		{Partition: 1, Leader: 3, LeaderEpoch: 0, Replicas: []int32{3, 1, 2}, ISR: []int32{3, 1, 2}, HighWatermark: 7, LogStartOffset: 0},
	}}
	if err := printTopic(&out, d, 2); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{"none (offline)", "none (2 lost its storage as the last in-sync replica: only an unclean election can elect a leader)", "3,1,2"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Count(s, "lost its storage") != 1 {
		t.Errorf("a partition with an ISR mentions lost storage:\n%s", s)
	}
}

// A partition left with another replica count than its topic's replication
// factor (its part of an RF change cancelled) says so; partitions of the
// topic's count, also those moving to it, do not.
func TestPrintTopicReplicaCountMismatch(t *testing.T) {
	var out strings.Builder
	d := client.TopicDescription{Name: "payments", ReplicationFactor: 3, MinISR: 2, Partitions: []client.PartitionInfo{
		{Partition: 0, Leader: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, HighWatermark: 5},
		{Partition: 1, Leader: 2, Replicas: []int32{2, 3, 1}, ISR: []int32{2, 3, 1}, HighWatermark: 5},
		{Partition: 2, Leader: 3, Replicas: []int32{3, 1, 4, 2}, ISR: []int32{3, 1, 2}, AddingReplicas: []int32{4},
			RemovingReplicas: []int32{2}, HighWatermark: 5},
	}}
	if err := printTopic(&out, d, 3); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if !strings.Contains(s, "1,2 (2, not the topic's replication factor 3)") || strings.Count(s, "not the topic's replication factor") != 1 {
		t.Errorf("replica count mismatch shown wrongly:\n%s", s)
	}
}
