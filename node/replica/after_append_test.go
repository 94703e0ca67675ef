package replica

import (
	"slices"
	"testing"
	"time"
)

// A parked acks=all produce is answered NotEnoughReplicasAfterAppend as
// soon as the set the HW counts is below the minimum ISR, whichever event
// makes it so, and parking one then answers at once: the HW cannot reach
// it until the ISR recovers. It used to wait for its deadline.
func TestParkedAnsweredWhenISRFallsBelowMin(t *testing.T) {
	now := time.Unix(1000, 0)
	st := State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}
	leader := func() *Replica {
		r := New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 0, 0)
		r.BecomeLeader(st, 0, now)
		r.LocalAppend(1)
		if d := r.ParkProduce(7, 1, 1, now.Add(time.Minute)); len(d.Complete) != 0 {
			t.Fatalf("parked at once: %+v", d.Complete)
		}
		return r
	}
	want := []Completion{{7, NotEnoughReplicasAfterAppend}}

	// The controller commits a shrink to the leader alone.
	r := leader()
	if d := r.ISRCommitted([]int32{1}, 2, now); !slices.Equal(d.Complete, want) || r.Parked() != 0 {
		t.Fatalf("shrink below min ISR completed %+v, %d still parked", d.Complete, r.Parked())
	}
	// Parked now: answered at once (the append raced the shrink).
	if d := r.ParkProduce(8, 1, 1, now.Add(time.Minute)); !slices.Equal(d.Complete, []Completion{{8, NotEnoughReplicasAfterAppend}}) {
		t.Fatalf("parked under min ISR: %+v", d.Complete)
	}

	// A shrink to min ISR exactly keeps it parked.
	r = leader()
	if d := r.ISRCommitted([]int32{1, 2}, 2, now); len(d.Complete) != 0 || r.Parked() != 1 {
		t.Fatalf("shrink to min ISR completed %+v", d.Complete)
	}

	// The minimum ISR raised above the ISR (same partition epoch).
	r = leader()
	raised := st
	raised.MinISR = 4
	if _, d := r.Apply(raised, 1, now); !slices.Equal(d.Complete, want) {
		t.Fatalf("min ISR raised to 4 over an ISR of 3: completed %+v", d.Complete)
	}

	// A refused expansion: the HW counted {1 2} while it was pending; the
	// committed {1} is below min ISR again.
	r = New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 0, 0)
	under := st
	under.ISR = []int32{1}
	r.BecomeLeader(under, 0, now)
	leo := int64(0)
	_, d := r.FollowerFetch(epochsUntil{&leo}, Fetch{ReplicaID: 2, Incarnation: 1, FetchOffset: 0, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1}, now)
	if !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("caught-up follower not proposed: %v", d.ProposeISR)
	}
	r.LocalAppend(1)
	if d := r.ParkProduce(7, 1, 1, now.Add(time.Minute)); len(d.Complete) != 0 {
		t.Fatalf("parked during a pending expansion to min ISR: %+v", d.Complete)
	}
	if d := r.ProposalFailed(); !slices.Equal(d.Complete, want) {
		t.Fatalf("refused expansion completed %+v", d.Complete)
	}
}
