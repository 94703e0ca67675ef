package replica

import (
	"slices"
	"testing"
	"time"
)

// epochsUntil: a log written in epoch 1 up to *leo, so a follower whose last
// batch is of epoch 2 diverges.
type epochsUntil struct{ leo *int64 }

func (e epochsUntil) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if epoch < 1 {
		return -1, -1
	}
	return 1, *e.leo
}

// TestNewIncarnationForgetsFetchState (KIP-903): the leader's view of a
// follower belongs to one process of it. The first fetch of a new
// incarnation drops what the previous one reported before anything else, so
// even a first fetch that only finds a divergence (and records no offset)
// leaves no stale log end behind for the next tick to propose an expansion
// on, now under the new incarnation's name, which the controller would
// accept. A proposal names the incarnation it was judged on.
func TestNewIncarnationForgetsFetchState(t *testing.T) {
	now := time.Unix(0, 0)
	leo := int64(0)
	r := New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3},
		ISR: []int32{1, 2}, MinISR: 2}, leo, now)
	leo = 5
	r.LocalAppend(leo)
	log := epochsUntil{&leo}
	fetch := func(inc, off int64, lastEpoch int32) (FetchCheck, Decisions) {
		t.Helper()
		return r.FollowerFetch(log, Fetch{ReplicaID: 3, Incarnation: inc, FetchOffset: off,
			LastFetchedEpoch: lastEpoch, CurrentLeaderEpoch: 1}, now)
	}
	r.FollowerFetch(log, Fetch{ReplicaID: 2, Incarnation: 1, FetchOffset: 5, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)

	// Incarnation 7 of node 3 catches up: proposed on incarnation 7.
	_, d := fetch(7, 5, 1)
	if !slices.Equal(d.ProposeISR, []int32{1, 2, 3}) {
		t.Fatalf("caught-up follower not proposed: %v", d.ProposeISR)
	}
	if m := r.PendingMembers(); !slices.Contains(m, Member{ID: 3, Incarnation: 7}) {
		t.Fatalf("pending members %v do not name incarnation 7", m)
	}
	// Node 3 restarts as incarnation 8 before the answer; the proposal
	// still names 7, the process it was judged on.
	fetch(8, 5, 2)
	if m := r.PendingMembers(); !slices.Contains(m, Member{ID: 3, Incarnation: 7}) {
		t.Fatalf("pending members %v changed after the proposal", m)
	}
	r.ProposalFailed() // the controller refused it: 8 is registered

	// A late fetch of incarnation 7 (incarnations grow with every start)
	// is refused and leaves incarnation 8's state alone.
	if chk, d := fetch(7, 5, 1); chk.Code != StaleIncarnation || d.ProposeISR != nil {
		t.Fatalf("fetch of the replaced incarnation: %v, proposed %v", chk.Code, d.ProposeISR)
	}
	if got := r.FollowerIncarnation(3); got != 8 {
		t.Fatalf("follower 3's incarnation %d, want 8", got)
	}

	// Incarnation 8's first fetch diverged (its last batch is of an epoch
	// we never wrote): nothing of incarnation 7 may remain.
	chk, _ := fetch(8, 5, 2)
	if !chk.Diverged() {
		t.Fatalf("fetch did not diverge: %+v", chk)
	}
	if got := r.FollowerLEO(3); got != -1 {
		t.Fatalf("follower 3's LEO %d survived its restart", got)
	}
	now = now.Add(time.Second)
	if d := r.Tick(now); d.ProposeISR != nil {
		t.Fatalf("tick proposed %v on the previous process's fetches", d.ProposeISR)
	}
	// Incarnation 8 truncates, fetches from 3 (behind), then catches up.
	if _, d := fetch(8, 3, 1); d.ProposeISR != nil {
		t.Fatalf("behind follower proposed: %v", d.ProposeISR)
	}
	if _, d := fetch(8, 5, 1); !slices.Equal(d.ProposeISR, []int32{1, 2, 3}) {
		t.Fatalf("caught-up incarnation 8 not proposed: %v", d.ProposeISR)
	}
	if m := r.PendingMembers(); !slices.Contains(m, Member{ID: 3, Incarnation: 8}) {
		t.Fatalf("pending members %v do not name incarnation 8", m)
	}
}

// TestNewIncarnationOfISRMemberMustCatchUp: an ISR member that restarts does
// not keep its place on its previous process's record: unless its new
// process shows it is caught up, the next tick proposes removing it.
func TestNewIncarnationOfISRMemberMustCatchUp(t *testing.T) {
	now := time.Unix(100, 0)
	leo := int64(5)
	r := New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 5, 5)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3},
		ISR: []int32{1, 2, 3}, MinISR: 2}, leo, now)
	log := epochsUntil{&leo}
	for _, id := range []int32{2, 3} {
		r.FollowerFetch(log, Fetch{ReplicaID: id, Incarnation: 1, FetchOffset: 5, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
	}
	now = now.Add(time.Second)
	if d := r.Tick(now); d.ProposeISR != nil {
		t.Fatalf("in-sync ISR shrunk: %v", d.ProposeISR)
	}
	// Node 3 restarts (incarnation 2) with 2 records.
	r.FollowerFetch(log, Fetch{ReplicaID: 3, Incarnation: 2, FetchOffset: 2, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
	r.FollowerFetch(log, Fetch{ReplicaID: 2, Incarnation: 1, FetchOffset: 5, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
	if d := r.Tick(now); !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("restarted member behind the leader not proposed for removal: %v", d.ProposeISR)
	}
}
