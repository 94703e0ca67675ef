package replica

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type fixedEpochs struct{ leo *int64 }

// EndOffsetForEpoch: a log written entirely in epoch 1.
func (f fixedEpochs) EndOffsetForEpoch(epoch int32) (int32, int64) {
	if epoch < 1 {
		return -1, -1
	}
	return 1, *f.leo
}

// TestLeaderInvariantsRandom drives a leader with random events and checks
// after each one: logStart <= hw <= leo; the HW never decreases; whenever
// the HW is above a committed ISR member's reported LEO that member's LEO is
// unknown to be lower (i.e. every committed member has reported >= hw); the
// HW never advanced while the effective ISR was below min ISR; every parked
// request needs more than the HW.
func TestLeaderInvariantsRandom(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		now := time.Unix(0, 0)
		r := New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 0, 0)
		leo := int64(0)
		st := State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: int32(rng.IntN(4))}
		r.BecomeLeader(st, leo, now)
		flw := map[int32]int64{2: 0, 3: 0} // followers' real logs
		var reqID uint64
		prevHW := r.HW()
		for step := range 300 {
			var d Decisions
			switch rng.IntN(7) {
			case 0, 1:
				leo += int64(rng.IntN(3))
				d = r.LocalAppend(leo)
			case 2, 3:
				id := int32(2 + rng.IntN(2))
				flw[id] = min(leo, flw[id]+int64(rng.IntN(4)))
				var chk FetchCheck
				chk, d = r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: id, FetchOffset: flw[id], LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
				if chk.Code != OK || chk.Diverged() {
					t.Fatalf("seed %d step %d: fetch %+v", seed, step, chk)
				}
			case 4:
				now = now.Add(time.Duration(rng.IntN(6)) * time.Second)
				d = r.Tick(now)
			case 5:
				if p := r.PendingISR(); p != nil {
					if rng.IntN(3) == 0 {
						d = r.ProposalFailed()
					} else {
						d = r.ISRCommitted(p, r.PartitionEpoch()+1, now)
					}
				}
			case 6:
				reqID++
				d = r.ParkProduce(reqID, 1, leo, now.Add(5*time.Second))
			}
			if !(r.LogStart() <= r.HW() && r.HW() <= r.LEO()) {
				t.Fatalf("seed %d step %d: start %d hw %d leo %d", seed, step, r.LogStart(), r.HW(), r.LEO())
			}
			if r.HW() < prevHW {
				t.Fatalf("seed %d step %d: hw decreased %d -> %d", seed, step, prevHW, r.HW())
			}
			if r.HW() > prevHW {
				set := r.effectiveISR()
				if len(set) < r.MinISR() {
					t.Fatalf("seed %d step %d: hw advanced with %v below min ISR %d", seed, step, set, r.MinISR())
				}
				for _, id := range set {
					if id != 1 && r.FollowerLEO(id) < r.HW() {
						t.Fatalf("seed %d step %d: hw %d above member %d's LEO %d", seed, step, r.HW(), id, r.FollowerLEO(id))
					}
				}
				if !d.HWChanged || d.HW != r.HW() {
					t.Fatalf("seed %d step %d: HW moved without a decision", seed, step)
				}
			}
			for _, p := range r.parked {
				if p.required <= r.HW() {
					t.Fatalf("seed %d step %d: parked request %d not completed", seed, step, p.id)
				}
			}
			prevHW = r.HW()
		}
	}
}

func TestApplyTransitions(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 2, LagTime: time.Second}, 0, 5, 3)
	st := State{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 4, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}, MinISR: 2}
	steps := []struct {
		mut  func(*State)
		want Transition
	}{
		{func(s *State) {}, ToFollower},
		{func(s *State) {}, Unchanged},
		{func(s *State) { s.ISR = []int32{1, 2}; s.PartitionEpoch = 5 }, Updated},
		{func(s *State) { s.PartitionEpoch = 4 }, StaleIgnored},
		{func(s *State) { s.PartitionEpoch = 5; s.LeaderEpoch = 2 }, StaleIgnored},
		{func(s *State) { s.LeaderEpoch = 4; s.PartitionEpoch = 6; s.Leader = 2 }, ToLeader},
		{func(s *State) {}, Unchanged},
		{func(s *State) { s.PartitionEpoch = 7; s.ISR = []int32{2} }, Updated},
		{func(s *State) { s.LeaderEpoch = 5; s.PartitionEpoch = 8 }, ToLeader}, // same leader, new epoch
		{func(s *State) { s.LeaderEpoch = 6; s.PartitionEpoch = 9; s.Leader = -1 }, Stopped},
		{func(s *State) { s.LeaderEpoch = 7; s.PartitionEpoch = 10; s.Leader = 3 }, ToFollower},
		{func(s *State) { s.LeaderEpoch = 8; s.PartitionEpoch = 11; s.Replicas = []int32{1, 3} }, Stopped},
	}
	for i, s := range steps {
		s.mut(&st)
		tr, _ := r.Apply(st, r.LEO(), now)
		if tr != s.want {
			t.Fatalf("step %d: %v, want %v (%s)", i, tr, s.want, r)
		}
	}
}

func TestParkCancelAndNotLeader(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 1, LagTime: time.Second}, 0, 0, 0)
	if d := r.ParkProduce(1, 1, 1, now); len(d.Complete) != 1 || d.Complete[0].Code != NotLeader {
		t.Fatalf("park on non-leader: %+v", d)
	}
	st := State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1}
	r.BecomeLeader(st, 0, now)
	r.LocalAppend(3)
	r.ParkProduce(2, 1, 3, now.Add(time.Second))
	r.ParkProduce(3, 1, 1, now.Add(time.Second))
	if !r.Cancel(2) || r.Cancel(2) {
		t.Fatal("cancel")
	}
	_, d := r.FollowerFetch(fixedEpochs{new(int64(3))}, Fetch{ReplicaID: 2, FetchOffset: 1, LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
	if !slices.Equal(d.Complete, []Completion{{3, OK}}) || d.HW != 1 {
		t.Fatalf("completion: %+v", d)
	}
	r.ParkProduce(4, 1, 3, time.Time{})
	d = r.BecomeFollower(State{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1})
	if !slices.Equal(d.Complete, []Completion{{4, NotLeader}}) {
		t.Fatalf("become follower: %+v", d)
	}
}

// TestParkAfterLeadershipRegained: a batch appended while leading epoch 1
// parks only while that leadership lasts. After the replica followed another
// leader (and may have truncated the batch away) and leads again, the HW
// passing the batch's offsets says nothing about it.
func TestParkAfterLeadershipRegained(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 1, LagTime: time.Second}, 0, 0, 0)
	st := State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}
	r.BecomeLeader(st, 0, now)
	r.LocalAppend(1) // the batch, in epoch 1
	// Epoch 2 on the same leader keeps the leadership: the batch stands.
	st.LeaderEpoch, st.PartitionEpoch = 2, 2
	r.BecomeLeader(st, 1, now)
	if d := r.ParkProduce(1, 1, 1, time.Time{}); !slices.Equal(d.Complete, []Completion{{1, OK}}) {
		t.Fatalf("park after a same-leader epoch bump: %+v", d)
	}
	// Node 2 leads epoch 3; we truncate the batch and copy node 2's record.
	r.BecomeFollower(State{Leader: 2, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{2}, MinISR: 1})
	r.Truncated(0, 0)
	r.LocalAppend(1)
	r.FollowerHW(1)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 4, PartitionEpoch: 4, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}, 1, now)
	for _, epoch := range []int32{1, 2} {
		if d := r.ParkProduce(2, epoch, 1, time.Time{}); !slices.Equal(d.Complete, []Completion{{2, NotLeader}}) || r.Parked() != 0 {
			t.Fatalf("park of an epoch-%d batch after leadership was lost and regained: %+v", epoch, d)
		}
	}
	if d := r.ParkProduce(3, 4, 1, time.Time{}); !slices.Equal(d.Complete, []Completion{{3, OK}}) {
		t.Fatalf("park in the current leadership: %+v", d)
	}
}

// TestHWBelowEpochStart (KIP-207): a new leader's HW, learnt as a follower,
// may lag its predecessor's until the followers fetch from it; until it
// reaches the epoch's start offset it is not an end offset to hand out.
func TestHWBelowEpochStart(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 1, LagTime: time.Second}, 0, 5, 2) // follower with HW 2, LEO 5
	if r.HWBelowEpochStart() {
		t.Fatal("a replica that does not lead has no epoch start")
	}
	st := State{Leader: 1, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1}
	r.BecomeLeader(st, 5, now)
	if !r.HWBelowEpochStart() || r.HW() != 2 || r.EpochStart() != 5 {
		t.Fatalf("new leader: below %v, %v", r.HWBelowEpochStart(), r)
	}
	fetch := func(off int64) {
		t.Helper()
		if chk, _ := r.FollowerFetch(fixedEpochs{}, Fetch{ReplicaID: 2, FetchOffset: off, LastFetchedEpoch: -1, CurrentLeaderEpoch: 2}, now); chk.Code != OK {
			t.Fatalf("fetch at %d: %+v", off, chk)
		}
	}
	fetch(4)
	if !r.HWBelowEpochStart() || r.HW() != 4 {
		t.Fatalf("follower at 4: below %v, %v", r.HWBelowEpochStart(), r)
	}
	fetch(5)
	if r.HWBelowEpochStart() || r.HW() != 5 {
		t.Fatalf("follower at 5: below %v, %v", r.HWBelowEpochStart(), r)
	}
	r.LocalAppend(7)
	if r.HWBelowEpochStart() {
		t.Fatalf("records of the epoch not yet replicated: %v", r)
	}
}

// TestLeaderCountsItselfWhenDurable: with TrackDurable the leader counts its
// own log toward the HW only up to what LocalDurable reported, a new leader
// only up to the durable end it reported as a follower, and a report from
// an earlier, interrupted leadership counts for nothing.
func TestLeaderCountsItselfWhenDurable(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 1, LagTime: time.Second, TrackDurable: true}, 0, 0, 0)
	st := State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}
	r.BecomeLeader(st, 0, now)
	if d := r.LocalAppend(3); d.HWChanged || r.HW() != 0 {
		t.Fatalf("HW moved over appended, not durable records: %v", r)
	}
	if d := r.LocalDurable(1, 2); !d.HWChanged || r.HW() != 2 {
		t.Fatalf("durable to 2: %+v %v", d, r)
	}
	r.LocalDurable(1, 9) // capped at the log end
	if r.HW() != 3 || r.Durable() != 3 {
		t.Fatalf("durable to 9 with leo 3: %v (durable %d)", r, r.Durable())
	}
	// Follower of epoch 2: truncated to 1, appended and flushed up to 2;
	// its log holds 4 when it leads again, in epoch 3.
	r.BecomeFollower(State{Leader: 2, LeaderEpoch: 2, PartitionEpoch: 2, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 1})
	r.Truncated(0, 1)
	r.LocalAppend(2)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1}, MinISR: 1}, 4, now)
	if r.HW() != 2 || r.Durable() != 2 {
		t.Fatalf("new leader over a log durable to 2 of 4: %v (durable %d)", r, r.Durable())
	}
	if d := r.LocalDurable(1, 4); d.HWChanged || r.HW() != 2 {
		t.Fatalf("a flush reported for the leadership of epoch 1 counted in epoch 3: %v", r)
	}
	if d := r.LocalDurable(3, 4); !d.HWChanged || r.HW() != 4 {
		t.Fatalf("durable to 4 in epoch 3: %v", r)
	}
}

// TestLagRule (replica.lag.time.max): a follower that fetches all the time
// but falls further and further behind the leader is proposed for removal
// once what it has is older than the lag time; an idle follower that is
// caught up, fetching only every long-poll, never is.
func TestLagRule(t *testing.T) {
	now := time.Unix(0, 0)
	const lag = 10 * time.Second
	r := New(Config{ID: 1, LagTime: lag}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3},
		ISR: []int32{1, 2, 3}, MinISR: 1}, 0, now)
	leo := int64(0)
	slow := int64(0) // follower 3's log end: one record a second behind five
	fetch := func(id int32, off int64) {
		t.Helper()
		if chk, _ := r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: id, FetchOffset: off, LastFetchedEpoch: 1,
			CurrentLeaderEpoch: 1}, now); chk.Code != OK || chk.Diverged() {
			t.Fatalf("fetch by %d at %d: %+v", id, off, chk)
		}
	}
	for sec := 1; sec <= 30; sec++ {
		now = now.Add(time.Second)
		if sec <= 20 { // the leader takes writes for 20 s, then idles
			leo += 5
			r.LocalAppend(leo)
		}
		slow = min(slow+1, leo)
		fetch(3, slow)
		if sec%2 == 0 { // follower 2 copies everything, fetching every 2 s
			fetch(2, leo)
		}
		d := r.Tick(now)
		switch {
		case d.ProposeISR != nil:
			// At second sec follower 3 has what the leader had at
			// sec/5 s: it lags by 0.8 sec s, over the lag time from
			// 12.5 s on. The leader keeps its LEO at earlier fetches
			// lag/8 apart (caughtup.go), so it may find the follower
			// caught up that much earlier than it was; and it looks
			// once a second.
			behind := time.Duration(sec) * time.Second * 4 / 5
			if behind <= lag-lag/leoHistoryLen {
				t.Fatalf("%d s: proposed %v with follower 3 %v behind, within the lag time", sec, d.ProposeISR, behind)
			}
			if behind > lag+2*time.Second {
				t.Fatalf("%d s: follower 3, %v behind, proposed only now", sec, behind)
			}
			if !slices.Equal(d.ProposeISR, []int32{1, 2}) {
				t.Fatalf("%d s: proposed %v, want [1 2]", sec, d.ProposeISR)
			}
			r.ISRCommitted(d.ProposeISR, r.PartitionEpoch()+1, now)
		}
	}
	if isr := r.ISR(); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v after 30 s, want [1 2] (follower 2 caught up, idle for the last 10 s)", isr)
	}
}
