package replica

import (
	"slices"
	"testing"
	"time"
)

// A follower that caught up is not proposed for the ISR while the leader's
// metadata does not show it live with the incarnation its fetches come
// from (Config.Eligible): the controller would refuse it. Found by `bench
// failover`: a restarted follower caught up 33 ms before its registration
// was unfenced; proposed then, it was refused, and rejoined the ISR 100 ms
// (the retry back-off) later than it could have. Once it is eligible, the
// leader's tick proposes it without waiting for another fetch.
func TestIneligibleFollowerIsNotProposed(t *testing.T) {
	now := time.Unix(1000, 0)
	live := map[int32]int64{2: 7} // broker 3 is not live yet
	r, fetch := soleLeader(t, Config{ID: 1, LagTime: 2 * time.Second, Eligible: func(id int32, inc int64) bool {
		reg, ok := live[id]
		return ok && reg == inc
	}}, []int32{1, 2, 3}, now)
	// 3 is in sync but not live (registered, not yet unfenced).
	if d := fetch(3, 9, now); d.ProposeISR != nil {
		t.Fatalf("follower 3, not live, proposed: %v", d.ProposeISR)
	}
	if d := r.Tick(now.Add(10 * time.Millisecond)); d.ProposeISR != nil {
		t.Fatalf("tick proposed follower 3, not live: %v", d.ProposeISR)
	}
	// 2 fetches from an incarnation other than its registered one (a
	// restart the leader's metadata has not seen yet): not proposed either.
	if d := fetch(2, 8, now.Add(20*time.Millisecond)); d.ProposeISR != nil {
		t.Fatalf("follower 2 on an unregistered incarnation proposed: %v", d.ProposeISR)
	}
	// 3 is unfenced: the next tick proposes it, without a fetch.
	live[3] = 9
	if d := r.Tick(now.Add(30 * time.Millisecond)); !slices.Equal(d.ProposeISR, []int32{1, 3}) {
		t.Fatalf("tick after follower 3 became live proposed %v, want [1 3]", d.ProposeISR)
	}
}

// soleLeader is broker cfg.ID leading replicas at log end 5 with an ISR of
// itself alone (min ISR 2), and fetch, which has follower id's process inc
// fetch at the leader's end at time at.
func soleLeader(t *testing.T, cfg Config, replicas []int32, now time.Time) (*Replica, func(id int32, inc int64, at time.Time) Decisions) {
	leo := int64(5)
	r := New(cfg, 0, 0, 0)
	r.BecomeLeader(State{Leader: cfg.ID, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: replicas,
		ISR: []int32{cfg.ID}, MinISR: 2}, leo, now)
	r.LocalAppend(leo)
	log := epochsUntil{&leo}
	return r, func(id int32, inc int64, at time.Time) Decisions {
		t.Helper()
		_, d := r.FollowerFetch(log, Fetch{ReplicaID: id, Incarnation: inc, FetchOffset: leo, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, at)
		return d
	}
}
