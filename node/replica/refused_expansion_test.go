package replica

import (
	"slices"
	"testing"
	"time"
)

// While an expansion is pending the HW counts the larger set, so a record
// appended meanwhile waits for the follower being added. When the
// controller refuses the expansion (IneligibleReplica: the follower
// restarted), the HW must be computed again over the committed ISR at once:
// it used to stay where it was until some unrelated event (another fetch or
// append), and a parked acks=all produce could time out although every ISR
// member had the record.
func TestRefusedExpansionLetsHWAdvance(t *testing.T) {
	now := time.Unix(1000, 0)
	leo := int64(5)
	r := New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2},
		ISR: []int32{1}, MinISR: 1}, leo, now)
	r.LocalAppend(leo)
	log := epochsUntil{&leo}
	// Follower 2 catches up to 5: its return to the ISR is proposed.
	_, d := r.FollowerFetch(log, Fetch{ReplicaID: 2, Incarnation: 1, FetchOffset: 5, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
	if !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("caught-up follower not proposed: %v", d.ProposeISR)
	}
	// A record at 5 while the expansion is pending: the HW waits for 2.
	leo = 6
	r.LocalAppend(leo)
	if r.HW() != 5 {
		t.Fatalf("HW %d while the expansion is pending, want 5 (follower 2 has not fetched 5)", r.HW())
	}
	// Refused: the committed ISR is {1}, which has everything.
	d = r.ProposalFailed()
	if r.HW() != 6 || !d.HWChanged {
		t.Fatalf("after the refusal HW %d (changed %v), want 6", r.HW(), d.HWChanged)
	}
}

// A follower whose return the controller refused is not proposed again by
// the leader's tick until it fetches again, so it cannot starve another
// follower that could return. Found by a chaos run (seed 4705, `--kinds
// all,net,shrink --session-timeout 250ms`): a partition whose ISR had
// shrunk to its leader (under min ISR 2) when broker 3 was killed and
// fenced kept proposing 3 — first in the assignment, and it had fetched in
// sync within the lag time — at every tick; the controller refused each,
// and follower 2, alive and in sync, got in only after 3 had restarted:
// writes stopped for 1.5 s instead of one fetch's time.
func TestRefusedFollowerDoesNotStarveAnother(t *testing.T) {
	now := time.Unix(1000, 0)
	r, fetch := soleLeader(t, Config{ID: 1, LagTime: 2 * time.Second}, []int32{1, 3, 2}, now)
	// 3 fetches in sync, and its return is proposed; then its process dies.
	if d := fetch(3, 1, now); !slices.Equal(d.ProposeISR, []int32{1, 3}) {
		t.Fatalf("in-sync follower 3 not proposed: %v", d.ProposeISR)
	}
	// 2 fetches in sync while that proposal is pending: nothing more.
	if d := fetch(2, 1, now.Add(10*time.Millisecond)); d.ProposeISR != nil {
		t.Fatalf("a second proposal while one is pending: %v", d.ProposeISR)
	}
	// The controller refuses 3 (fenced, its process gone).
	r.ProposalFailed()
	// The next ticks propose 2, the follower that can return, not 3 again.
	if d := r.Tick(now.Add(250 * time.Millisecond)); !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("tick after 3 was refused proposed %v, want [1 2]", d.ProposeISR)
	}
	// Refused too (not yet unfenced, say): the tick takes turns, the least
	// recently refused first, while neither fetches.
	for i, want := range [][]int32{{1, 3}, {1, 2}, {1, 3}} {
		r.ProposalFailed()
		if d := r.Tick(now.Add(time.Duration(500+250*i) * time.Millisecond)); !slices.Equal(d.ProposeISR, want) {
			t.Fatalf("tick %d after refusals proposed %v, want %v", i, d.ProposeISR, want)
		}
	}
	r.ProposalFailed()
	// 2 fetches again: its return is proposed on that fetch, as always.
	if d := fetch(2, 1, now.Add(1300*time.Millisecond)); !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("follower 2's fetch after its refusals proposed %v, want [1 2]", d.ProposeISR)
	}
	// Committed: 3, dead, stays out; restarted (a new process) and in
	// sync, it is proposed on its fetch.
	r.ISRCommitted([]int32{1, 2}, 2, now.Add(1400*time.Millisecond))
	if d := fetch(3, 2, now.Add(1500*time.Millisecond)); !slices.Equal(d.ProposeISR, []int32{1, 3, 2}) {
		t.Fatalf("restarted follower 3 not proposed: %v", d.ProposeISR)
	}
}
