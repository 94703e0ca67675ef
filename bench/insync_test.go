package bench

import "testing"

// TestInSyncComparesMembers: a full ISR means the replicas themselves, not
// an ISR of the same length. An ISR with a repeated member or a node that
// is not a replica leaves a replica out, and the failover and throughput
// phases must not start (or a trial choose its victim) on it.
func TestInSyncComparesMembers(t *testing.T) {
	cases := []struct {
		name string
		isr  []int32
		want bool
	}{
		{"full", []int32{1, 2, 3}, true},
		{"full, another order", []int32{3, 1, 2}, true},
		{"one missing", []int32{1, 2}, false},
		{"repeated member", []int32{1, 2, 2}, false},
		{"a non-replica", []int32{1, 2, 4}, false},
		{"empty", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := md(1, 1, alive3, tc.isr, 1, 0)
			if got := inSync(m, "t"); got != tc.want {
				t.Fatalf("inSync with ISR %v of replicas [1 2 3] = %v, want %v", tc.isr, got, tc.want)
			}
		})
	}
	noReplicas := md(1, 1, alive3, nil, 1, 0)
	noReplicas.Topics[0].Partitions[0].Replicas = nil
	if inSync(noReplicas, "t") {
		t.Fatal("a partition without replicas is in sync")
	}
}
