package replica

import (
	"slices"
	"testing"
	"time"
)

// TestDurableReportRules: a pipelined follower's fetch offset runs ahead of
// its durable end; only the durable end moves the HW, whether it comes with
// a fetch or in a report. A report counts only under the leader's epoch,
// from the incarnation whose fetches the leader checked, and only up to the
// last fetch offset checked.
func TestDurableReportRules(t *testing.T) {
	now := time.Unix(0, 0)
	r := New(Config{ID: 1, LagTime: 10 * time.Second}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 3, PartitionEpoch: 3, Replicas: []int32{1, 2}, ISR: []int32{1, 2}, MinISR: 2}, 0, now)
	leo := int64(10)
	r.LocalAppend(leo)
	r.ParkProduce(1, 3, 10, now.Add(time.Minute))
	fetch := func(off, durable int64) Decisions {
		t.Helper()
		chk, d := r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: 2, Incarnation: 7, FetchOffset: off, Durable: durable,
			LastFetchedEpoch: 1, CurrentLeaderEpoch: 3}, now)
		if chk.Code != OK || chk.Diverged() {
			t.Fatalf("fetch at %d: %+v", off, chk)
		}
		return d
	}
	report := func(inc int64, epoch int32, off int64) Decisions {
		return r.FollowerDurable(DurableReport{ReplicaID: 2, Incarnation: inc, Offset: off, CurrentLeaderEpoch: epoch}, now)
	}

	// Before any fetch, a report counts for nothing.
	if report(7, 3, 10); r.HW() != 0 {
		t.Fatalf("a report before any fetch moved the HW: %v", r)
	}
	// The follower has fetched all 10 records, none durable yet.
	if fetch(10, 0); r.HW() != 0 || r.FollowerLEO(2) != 0 {
		t.Fatalf("a fetch at 10 durable to 0 moved the HW: %v (follower durable %d)", r, r.FollowerLEO(2))
	}
	for _, c := range []struct {
		name  string
		inc   int64
		epoch int32
	}{{"an older epoch", 7, 2}, {"a newer epoch", 7, 4}, {"no epoch", 7, -1}, {"another incarnation", 8, 3}, {"an unknown incarnation", 0, 3}} {
		if d := report(c.inc, c.epoch, 10); r.HW() != 0 || d.HWChanged {
			t.Fatalf("a report for %s moved the HW: %v", c.name, r)
		}
	}
	if d := report(7, 3, 6); r.HW() != 6 || !d.HWChanged || len(d.Complete) != 0 {
		t.Fatalf("durable to 6: %v %+v", r, d)
	}
	// Past the last fetch offset checked (10) it counts only up to it.
	leo = 20
	r.LocalAppend(leo)
	if d := report(7, 3, 20); r.HW() != 10 || !slices.Equal(d.Complete, []Completion{{1, OK}}) {
		t.Fatalf("a report of 20 after a fetch at 10: %v %+v", r, d)
	}
	// A fetch whose durable end was read before the last report arrived
	// (overtaken on the way) does not take it back.
	if fetch(20, 6); r.FollowerLEO(2) != 10 {
		t.Fatalf("a stale durable end in a fetch lowered the follower's to %d", r.FollowerLEO(2))
	}
	if report(7, 3, 20); r.HW() != 20 {
		t.Fatalf("durable to 20 after a fetch at 20: %v", r)
	}
	// A fetch offset below the durable end (the follower cut its log) caps it.
	if fetch(15, 15); r.FollowerLEO(2) != 15 {
		t.Fatalf("a fetch at 15 left the follower's durable end at %d", r.FollowerLEO(2))
	}
}

// TestPipelinedFollowerStaysInSync: a follower that fetches the next records
// while it flushes the last ones, under constant writes, has at every fetch
// durably what the leader had one fetch earlier. It stays in the ISR. One
// whose flushes stop (it still fetches) is proposed for removal once the lag
// time passes since what its last flush covered.
func TestPipelinedFollowerStaysInSync(t *testing.T) {
	now := time.Unix(0, 0)
	const lag = 2 * time.Second
	r := New(Config{ID: 1, LagTime: lag}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3},
		ISR: []int32{1, 2, 3}, MinISR: 1}, 0, now)
	leo := int64(0)
	type follower struct {
		id             int32
		fetched, flush int64 // log end, and what its running flush will make durable
		durable        int64
	}
	fs := []*follower{{id: 2}, {id: 3}}
	const stopsAt = 5 * time.Second // follower 3's flushes stop
	var proposedAt time.Duration
	for step := 1; step <= 100; step++ {
		now = now.Add(100 * time.Millisecond)
		leo += 7
		r.LocalAppend(leo)
		elapsed := time.Duration(step) * 100 * time.Millisecond
		for _, f := range fs {
			// The flush started after the last fetch ends; it is reported.
			if f.id == 2 || elapsed <= stopsAt {
				f.durable = f.flush
				r.FollowerDurable(DurableReport{ReplicaID: f.id, Offset: f.durable, CurrentLeaderEpoch: 1}, now)
			}
			// The next fetch carries the durable end; its answer brings
			// everything up to the leader's LEO, whose flush starts.
			if chk, _ := r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: f.id, FetchOffset: f.fetched, Durable: f.durable,
				LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now); chk.Code != OK || chk.Diverged() {
				t.Fatalf("fetch by %d: %+v", f.id, chk)
			}
			f.flush, f.fetched = f.fetched, leo
		}
		if d := r.Tick(now); d.ProposeISR != nil {
			if !slices.Equal(d.ProposeISR, []int32{1, 2}) {
				t.Fatalf("%v: proposed %v, want [1 2] (follower 2 keeps up)", elapsed, d.ProposeISR)
			}
			if proposedAt == 0 {
				proposedAt = elapsed
			}
			r.ISRCommitted(d.ProposeISR, r.PartitionEpoch()+1, now)
		}
	}
	if proposedAt == 0 || proposedAt <= stopsAt+lag-time.Second || proposedAt > stopsAt+lag+time.Second {
		t.Fatalf("follower 3, whose flushes stopped at %v, proposed for removal at %v (lag time %v)", stopsAt, proposedAt, lag)
	}
	if isr := r.ISR(); !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("ISR %v, want [1 2]", isr)
	}
}
