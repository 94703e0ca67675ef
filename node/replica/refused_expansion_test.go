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
