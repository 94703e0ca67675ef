package replica

import (
	"testing"
	"time"
)

// A follower fetch or a produce naming a newer leader epoch than a replica
// that does not lead (yet) is answered UnknownLeaderEpoch: this node has not applied
// the metadata that makes it the leader, and the follower retries soon. An
// older or equal epoch still gets NotLeader.
func TestFollowerFetchAheadOfALeaderToBe(t *testing.T) {
	now := time.Unix(0, 0)
	leo := int64(0)
	log := epochsUntil{&leo}
	r := New(Config{ID: 2, LagTime: 10 * time.Second}, 0, 0, 0)
	r.BecomeFollower(State{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2})
	for _, c := range []struct {
		epoch int32
		want  Code
	}{{5, UnknownLeaderEpoch}, {4, NotLeader}, {3, NotLeader}, {-1, NotLeader}} {
		chk, _ := r.FollowerFetch(log, Fetch{ReplicaID: 3, Incarnation: 1, CurrentLeaderEpoch: c.epoch}, now)
		if chk.Code != c.want {
			t.Errorf("fetch with epoch %d from a follower at epoch 4: %v, want %v", c.epoch, chk.Code, c.want)
		}
		if got := r.CheckProduce(c.epoch, true); got != c.want {
			t.Errorf("produce with epoch %d to a follower at epoch 4: %v, want %v", c.epoch, got, c.want)
		}
		if got := r.CheckEpochAhead(c.epoch); got != c.want { // a consumer's fetch
			t.Errorf("consumer fetch with epoch %d from a follower at epoch 4: %v, want %v", c.epoch, got, c.want)
		}
	}
	// Once it leads at that epoch, the fetch is taken.
	r.BecomeLeader(State{Leader: 2, LeaderEpoch: 5, PartitionEpoch: 5, Replicas: []int32{1, 2, 3}, ISR: []int32{2, 3}, MinISR: 2}, leo, now)
	if chk, _ := r.FollowerFetch(log, Fetch{ReplicaID: 3, Incarnation: 1, CurrentLeaderEpoch: 5}, now); chk.Code != OK {
		t.Fatalf("fetch at the leader's epoch: %v", chk.Code)
	}
}
