package replica

import (
	"slices"
	"testing"
	"time"
)

// TestStalledFollowerIsNotAddedBackByTheTick: with min ISR equal to the
// replication factor, a follower whose fetches stop (its disk hangs) holds
// the HW where its last fetch left it. It is shrunk out once the lag time
// passes; the leader's tick must not add it back because its last offset is
// still at the (stuck) HW: it used to, at the very next tick, and the ISR
// flapped every lag time with a metadata change each way. Its next fetch
// adds it back, and a proposal that fails is retried by the tick while the
// follower keeps fetching.
func TestStalledFollowerIsNotAddedBackByTheTick(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const lag = 2 * time.Second
	r := New(Config{ID: 1, LagTime: lag}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2},
		ISR: []int32{1, 2}, MinISR: 2}, 0, t0)
	leo := int64(10)
	r.LocalAppend(leo)
	fetch := func(off int64, now time.Time) Decisions {
		t.Helper()
		chk, d := r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: 2, Incarnation: 1, FetchOffset: off, LastFetchedEpoch: 1,
			CurrentLeaderEpoch: 1}, now)
		if chk.Code != OK || chk.Diverged() {
			t.Fatalf("fetch at %d: %+v", off, chk)
		}
		return d
	}
	fetch(5, t0.Add(100*time.Millisecond)) // then its disk hangs
	if r.HW() != 5 {
		t.Fatalf("HW %d, want 5", r.HW())
	}
	var shrinks int
	for now := t0; now.Before(t0.Add(10 * time.Second)); now = now.Add(100 * time.Millisecond) {
		d := r.Tick(now)
		switch {
		case d.ProposeISR == nil:
		case slices.Equal(d.ProposeISR, []int32{1}):
			shrinks++
			r.ISRCommitted(d.ProposeISR, r.PartitionEpoch()+1, now)
		default:
			t.Fatalf("%v after the follower's last fetch: proposed %v", now.Sub(t0.Add(100*time.Millisecond)), d.ProposeISR)
		}
	}
	if shrinks != 1 || !slices.Equal(r.ISR(), []int32{1}) || r.HW() != 5 {
		t.Fatalf("%d shrinks, ISR %v, HW %d; want one shrink to [1], the HW held at 5 below min ISR", shrinks, r.ISR(), r.HW())
	}

	// The follower fetches again: it is proposed at once.
	now := t0.Add(10 * time.Second)
	if d := fetch(10, now); !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("fetch at the leader's LEO after the stall: proposed %v, want [1 2]", d.ProposeISR)
	}
	// The proposal fails (the controller was unreachable): the tick retries
	// it while the follower's fetches are recent.
	r.ProposalFailed()
	if d := r.Tick(now.Add(100 * time.Millisecond)); !slices.Equal(d.ProposeISR, []int32{1, 2}) {
		t.Fatalf("tick after a failed expansion: proposed %v, want [1 2]", d.ProposeISR)
	}
}
