package replica

import (
	"slices"
	"testing"
	"time"
)

// A reassignment seen by the leader: a replica added while it leads is
// served and proposed for the ISR once caught up; one removed is refused
// from then on and no longer listed among the followers.
func TestLeaderFollowsReassignedReplicas(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 1, LagTime: time.Second}, 0, 0, 0)
	st := State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}
	r.BecomeLeader(st, 0, now)
	leo := int64(10)
	r.LocalAppend(leo)
	fetch := func(id int32, off int64) FetchCheck {
		t.Helper()
		chk, d := r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: id, FetchOffset: off, LastFetchedEpoch: 1,
			CurrentLeaderEpoch: 1}, now)
		if d.ProposeISR != nil {
			r.ISRCommitted(d.ProposeISR, r.PartitionEpoch()+1, now)
		}
		return chk
	}
	if chk := fetch(4, 0); chk.Code != NotReplica {
		t.Fatalf("fetch by 4 before it is a replica: %+v", chk)
	}
	// Replicas [4,2,3,1]: 4 added, 1 (this leader) being removed.
	st.Replicas, st.PartitionEpoch = []int32{4, 2, 3, 1}, 2
	if tr, _ := r.Apply(st, leo, now); tr != Updated {
		t.Fatalf("apply: %v", tr)
	}
	fetch(2, leo)
	fetch(3, leo)
	if chk := fetch(4, 0); chk.Code != OK {
		t.Fatalf("fetch by added replica 4: %+v", chk)
	}
	fetch(4, leo)
	if isr := r.ISR(); !slices.Equal(isr, []int32{4, 2, 3, 1}) {
		t.Fatalf("ISR %v once 4 caught up, want [4 2 3 1]", isr)
	}
	// The follower 3 is removed (a reassignment of a follower completing).
	st = State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: r.PartitionEpoch() + 1, Replicas: []int32{1, 2, 4},
		ISR: []int32{1, 2, 4}, MinISR: 2}
	if tr, _ := r.Apply(st, leo, now); tr != Updated {
		t.Fatalf("apply: %v", tr)
	}
	if chk := fetch(3, leo); chk.Code != NotReplica {
		t.Fatalf("fetch by removed replica 3: %+v", chk)
	}
	var ids []int32
	for _, l := range r.FollowerLags() {
		ids = append(ids, l.ID)
	}
	if !slices.Equal(ids, []int32{2, 4}) {
		t.Fatalf("followers %v, want [2 4]", ids)
	}
}
