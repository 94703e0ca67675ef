package bench

import (
	"strings"
	"testing"
	"time"
)

// TestFailoverUnavailabilityEndsBeforeTheNextKill: a trial in which no
// later leader epoch acknowledged anything before the next trial's kill
// has no figure. The first new-epoch acknowledgement after its kill belongs
// to the next trial; counting it would give this trial a figure (here
// 1600 ms) that spans another kill and is not its unavailability.
func TestFailoverUnavailabilityEndsBeforeTheNextKill(t *testing.T) {
	f := &readbackFixture{start: time.Unix(1000, 0), got: map[int32]map[int64]readRec{0: {}, 1: {}}}
	ms := func(n int) time.Time { return f.start.Add(time.Duration(n) * time.Millisecond) }
	seq := uint64(0)
	ack := func(epoch int32, at int) {
		seq++
		f.ack(0, recordID{seq: seq}, epoch, ms(at))
	}
	ack(3, 0)
	ack(3, 90)   // trial 1 kills the epoch-3 leader at 100: no epoch-4 ack follows
	ack(5, 1700) // trial 2 kills at 1000; epoch 5 acknowledges at 1700
	res := f.check(
		FailoverTrial{Trial: 1, Victim: 1, OldEpoch: 3, UnavailableMs: 40, killAt: ms(100)},
		FailoverTrial{Trial: 2, Victim: 2, OldEpoch: 4, UnavailableMs: 40, killAt: ms(1000)},
	)
	if tr := res.Trials[0]; tr.UnavailableMs != -1 || !strings.Contains(tr.Error, "before the next trial's kill") {
		t.Errorf("trial 1: unavailable %v ms, error %q; want no figure and an error", tr.UnavailableMs, tr.Error)
	}
	if tr := res.Trials[1]; tr.UnavailableMs != 700 || tr.Error != "" {
		t.Errorf("trial 2: unavailable %v ms, error %q; want 700 ms", tr.UnavailableMs, tr.Error)
	}
	if len(res.problems()) == 0 {
		t.Error("the run passes")
	}
}
