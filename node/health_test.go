package node

import (
	"reflect"
	"testing"
)

func TestHealthChecks(t *testing.T) {
	p := func(name string, inSync bool, minISR int32, isr ...int32) partitionHealth {
		return partitionHealth{name: name, isr: isr, inSync: inSync, minISR: minISR}
	}
	ready := healthView{self: 1, registered: true,
		partitions: []partitionHealth{p("pay-0", true, 2, 1, 2, 3), p("pay-1", true, 2, 2, 1, 3)},
		voters:     []int32{1, 2, 3}, liveVoters: []int32{1, 2, 3}}
	for _, c := range []struct {
		name             string
		edit             func(*healthView)
		notReady, unsafe []string
	}{
		{"ready and safe", func(*healthView) {}, nil, nil},
		{"stopping", func(v *healthView) { v.stopping = true }, []string{"the node is stopping"}, nil},
		{"not registered", func(v *healthView) { v.registered = false },
			[]string{"not registered with the controller yet (at this start)"}, nil},
		{"fenced", func(v *healthView) { v.fenced = true },
			[]string{"fenced by the controller (no heartbeat answered recently, or catching up on metadata)"}, nil},
		{"controlled shutdown", func(v *healthView) { v.shuttingDown = true }, []string{"in a controlled shutdown"}, nil},
		{"disk stalled", func(v *healthView) {
			v.fenced = true
			v.diskStall = "disk stalled: fdatasync of /d/pay-0/00000000000000000000.log in flight for 3.2s"
		}, []string{"fenced by the controller (no heartbeat answered recently, or catching up on metadata)",
			"disk stalled: fdatasync of /d/pay-0/00000000000000000000.log in flight for 3.2s"}, nil},
		{"behind on one partition", func(v *healthView) { v.partitions[1] = p("pay-1", false, 2, 2, 3) },
			[]string{"not in the ISR of 1 of its 2 partitions: pay-1"}, nil},
		{"a peer is out of the ISR", func(v *healthView) { v.partitions[0] = p("pay-0", true, 2, 1, 2) }, nil,
			[]string{"1 partitions would fall below min.insync.replicas (acks=all writes refused): pay-0 (ISR [1 2], min.insync.replicas 2)"}},
		{"min ISR 1 tolerates it", func(v *healthView) { v.partitions[0] = p("pay-0", true, 1, 1, 2) }, nil, nil},
		{"the last in-sync replica", func(v *healthView) { v.partitions[0] = p("pay-0", true, 1, 1) }, nil,
			[]string{"the only in-sync replica of 1 partitions (they would go offline): pay-0"}},
		{"not in sync, so not counted", func(v *healthView) { v.partitions[0] = p("pay-0", false, 2, 2, 3) },
			[]string{"not in the ISR of 1 of its 2 partitions: pay-0"}, nil},
		{"being added by a reassignment", func(v *healthView) {
			v.partitions[0] = p("pay-0", false, 2, 2, 3)
			v.partitions[0].adding = true
		}, nil, nil},
		{"a voter down", func(v *healthView) { v.liveVoters = []int32{1, 2} }, nil,
			[]string{"the metadata quorum would lose its majority: 1 other live voters of 3 ([1 2] live), 2 needed"}},
		{"this voter down already", func(v *healthView) { v.liveVoters = []int32{2, 3} }, nil, nil},
		{"not a voter", func(v *healthView) { v.voters, v.liveVoters = nil, nil }, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := ready
			v.partitions = append([]partitionHealth(nil), ready.partitions...)
			c.edit(&v)
			if got := v.notReady(); !reflect.DeepEqual(got, c.notReady) {
				t.Errorf("notReady = %q, want %q", got, c.notReady)
			}
			if got := v.unsafeToStop(); !reflect.DeepEqual(got, c.unsafe) {
				t.Errorf("unsafeToStop = %q, want %q", got, c.unsafe)
			}
		})
	}
}

func TestHealthNamesAtMostTenPartitions(t *testing.T) {
	v := healthView{self: 1, registered: true}
	for i := range 12 {
		v.partitions = append(v.partitions, partitionHealth{name: string(rune('a' + i)), isr: []int32{2}})
	}
	want := []string{"not in the ISR of 12 of its 12 partitions: a, b, c, d, e, f, g, h, i, j and 2 more"}
	if got := v.notReady(); !reflect.DeepEqual(got, want) {
		t.Fatalf("notReady = %q, want %q", got, want)
	}
}
