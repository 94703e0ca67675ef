package replica

import (
	"testing"
	"time"
)

// TestFollowerKeepingPaceBehindAFullWindowStaysInTheISR: acks=all
// producers keep the leader a window of 10 ahead of a follower whose
// answers carry 8 at most (every fetch moves the HW and lets the producers
// send as much again), so no fetch reaches the LEO of the fetch before it.
// The follower has what the leader had two fetches earlier: 200 ms behind,
// with a lag time of 2 s. Kafka's rule shrank it out after the lag time
// (`paymentlog bench` at full load: behind=8865 fetched_ago=156ms).
func TestFollowerKeepingPaceBehindAFullWindowStaysInTheISR(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const (
		lag    = 2 * time.Second
		window = 10
		answer = 8
	)
	r := New(Config{ID: 1, LagTime: lag}, 0, 0, 0)
	r.BecomeLeader(State{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2},
		ISR: []int32{1, 2}, MinISR: 2}, 0, t0)
	leo, follower := int64(window), int64(0)
	r.LocalAppend(leo)
	for now := t0; now.Before(t0.Add(10 * lag)); now = now.Add(100 * time.Millisecond) {
		chk, d := r.FollowerFetch(fixedEpochs{&leo}, Fetch{ReplicaID: 2, Incarnation: 1, FetchOffset: follower,
			LastFetchedEpoch: 1, CurrentLeaderEpoch: 1}, now)
		if chk.Code != OK || chk.Diverged() {
			t.Fatalf("fetch at %d: %+v", follower, chk)
		}
		if d.HW != follower {
			t.Fatalf("HW %d after a fetch at %d, want the follower's offset", d.HW, follower)
		}
		follower += answer
		leo = follower + window // the producers' acknowledged batches replaced
		r.LocalAppend(leo)
		if d := r.Tick(now); d.ProposeISR != nil {
			t.Fatalf("%v: proposed %v for a follower %d behind, fetching every 100ms", now.Sub(t0), d.ProposeISR, window)
		}
	}
	lags := r.FollowerLags()
	if got := lags[0].CaughtUp; t0.Add(10*lag).Sub(got) > lag/2 {
		t.Fatalf("follower last caught up at %v, want within %v of the end", got.Sub(t0), lag/2)
	}
}

// TestLEOHistoryKeepsSpacedPoints: the history keeps a point only once the
// spacing has passed since the newest one, overwrites the oldest when full,
// and finds the latest point at or below an offset.
func TestLEOHistoryKeepsSpacedPoints(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var h leoHistory
	if _, ok := h.reachedAt(1 << 40); ok {
		t.Fatal("empty history reached")
	}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for ms := 0; ms <= 2000; ms += 100 { // LEO 10 per 100 ms; points every 250 ms at least
		h.add(at(ms), int64(ms/10), 250*time.Millisecond)
	}
	// Kept: 0, 300, 600, ..., 1800 (seven), then 2100 would be next: the
	// ring holds the last eight kept, 0 included.
	for _, c := range []struct {
		offset int64
		want   int // ms; -1: none
	}{
		{0, 0}, {29, 0}, {30, 300}, {119, 900}, {180, 1800}, {1 << 40, 1800},
	} {
		got, ok := h.reachedAt(c.offset)
		switch {
		case c.want < 0 && ok:
			t.Errorf("offset %d reached at %v, want never", c.offset, got.Sub(t0))
		case c.want >= 0 && (!ok || !got.Equal(at(c.want))):
			t.Errorf("offset %d reached at %v (%v), want %dms", c.offset, got.Sub(t0), ok, c.want)
		}
	}
	h.add(at(2100), 210, 250*time.Millisecond)
	h.add(at(2400), 240, 250*time.Millisecond) // the ninth point kept: 0 goes
	if _, ok := h.reachedAt(29); ok {
		t.Error("offset 29 reached after the point at 0 ms was overwritten")
	}
	if got, _ := h.reachedAt(30); !got.Equal(at(300)) {
		t.Errorf("offset 30 reached at %v, want 300ms", got.Sub(t0))
	}
}
