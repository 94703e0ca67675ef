package localcluster

import (
	"testing"

	"paymentlog/wire"
)

func TestViewInSync(t *testing.T) {
	part := func(p, leader int32, isr ...int32) wire.PartitionMetadata {
		return wire.PartitionMetadata{Partition: p, Leader: leader, Replicas: []int32{1, 2, 3}, ISR: isr}
	}
	view := func(parts ...wire.PartitionMetadata) *View {
		return &View{Topics: []wire.TopicMetadata{{Name: "other"}, {Name: "t", Partitions: parts}}}
	}
	cases := []struct {
		name string
		v    *View
		want bool
	}{
		{"every partition in sync", view(part(0, 1, 1, 2, 3), part(1, 2, 3, 2, 1)), true},
		{"a partition short of its ISR", view(part(0, 1, 1, 2, 3), part(1, 2, 1, 2)), false},
		{"a partition without a leader", view(part(0, -1, 1, 2, 3)), false},
		{"an ISR naming a non-replica", view(part(0, 1, 1, 2, 4)), false},
		{"no partitions at all", view(), false},
		{"topic missing", &View{Topics: []wire.TopicMetadata{{Name: "other"}}}, false},
	}
	for _, tc := range cases {
		if got, err := tc.v.InSync("t"); got != tc.want || (err == nil) != tc.want {
			t.Errorf("%s: InSync = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
