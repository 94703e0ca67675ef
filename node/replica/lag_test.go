package replica

import (
	"testing"
	"time"
)

// The leader sees a follower's lag in offsets from its fetches, and when it
// was last caught up; a follower that has not fetched lags by the whole log.
func TestFollowerLags(t *testing.T) {
	t0 := time.Unix(1000, 0)
	r := New(Config{ID: 1, LagTime: time.Second}, 0, 0, 0)
	if r.FollowerLags() != nil {
		t.Fatal("lags while not leader")
	}
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}, MinISR: 1}, 0, t0)
	r.LocalAppend(100)
	r.FollowerFetch(epochsAt(1), Fetch{ReplicaID: 2, FetchOffset: 60, LastFetchedEpoch: -1, CurrentLeaderEpoch: 1}, t0.Add(time.Second))
	lags := r.FollowerLags()
	if len(lags) != 2 {
		t.Fatalf("lags = %+v", lags)
	}
	if l := lags[0]; l.ID != 2 || !l.LEOKnown || l.Messages != 40 || !l.CaughtUp.Equal(t0) {
		t.Fatalf("follower 2 = %+v, want 40 behind, caught up at t0", l)
	}
	if l := lags[1]; l.ID != 3 || l.LEOKnown || l.Messages != 100 || !l.CaughtUp.IsZero() {
		t.Fatalf("follower 3 = %+v, want unknown, 100 behind, never caught up", l)
	}
}

// epochsAt is an EpochSource whose log holds one epoch (for fetches that
// agree with it).
type epochsAt int32

func (e epochsAt) EndOffsetForEpoch(epoch int32) (int32, int64) { return int32(e), 1 << 62 }
