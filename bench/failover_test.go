package bench

import (
	"strings"
	"testing"
	"time"

	"paymentlog/client"
)

// readbackFixture is a failover run in miniature: two partitions, records
// acknowledged every millisecond alternating between them, all under leader
// epoch 1, and the log read back holding exactly those records.
type readbackFixture struct {
	start time.Time
	acks  []ackRec
	times []time.Time
	got   map[int32]map[int64]readRec
}

func newReadbackFixture(n int) *readbackFixture {
	f := &readbackFixture{start: time.Unix(1000, 0), got: map[int32]map[int64]readRec{0: {}, 1: {}}}
	for i := range n {
		f.ack(int32(i%2), recordID{producer: 0, seq: uint64(i)}, 1, f.start.Add(time.Duration(i)*time.Millisecond))
	}
	return f
}

// ack adds an acknowledged record at the next offset of part, written under epoch.
func (f *readbackFixture) ack(part int32, id recordID, epoch int32, at time.Time) int64 {
	off := int64(len(f.got[part]))
	f.acks = append(f.acks, ackRec{part: part, offset: off, id: id})
	f.times = append(f.times, at)
	f.got[part][off] = readRec{id: id, epoch: epoch}
	return off
}

func (f *readbackFixture) check(trials ...FailoverTrial) *FailoverResult {
	res := &FailoverResult{Topic: "t", Acked: int64(len(f.acks)), Trials: trials}
	res.checkReadback(f.acks, f.times, f.got)
	return res
}

func TestCheckReadbackClean(t *testing.T) {
	res := newReadbackFixture(40).check()
	if res.Verified != 40 || res.LostRecords != 0 || res.Duplicates != 0 || res.Unverified != 0 {
		t.Fatalf("verified %d lost %d duplicates %d unverified %d", res.Verified, res.LostRecords, res.Duplicates, res.Unverified)
	}
	if errs := res.problems(); len(errs) != 0 {
		t.Fatalf("problems: %v", errs)
	}
}

// TestCheckReadbackNamesEachAnomaly feeds the read-back check logs that
// broke the promise in one way each: every one must be counted and must
// fail the run.
func TestCheckReadbackNamesEachAnomaly(t *testing.T) {
	cases := []struct {
		name       string
		mutate     func(f *readbackFixture)
		lost, dups int64
		lostSays   string
	}{
		{"lost (missing at its offset)", func(f *readbackFixture) {
			delete(f.got[0], 5)
		}, 1, 0, "missing"},
		{"lost (log ends early)", func(f *readbackFixture) {
			for off := int64(15); off < 20; off++ {
				delete(f.got[1], off)
			}
		}, 5, 0, "missing"},
		{"overwritten by another record", func(f *readbackFixture) {
			f.got[1][3] = readRec{id: recordID{producer: 9, seq: 9}, epoch: 2}
		}, 1, 0, "found producer 9 seq 9"},
		{"moved to another offset", func(f *readbackFixture) {
			// A record slipped in at offset 4: everything after moved up by one.
			p := f.got[0]
			for off := int64(len(p)); off > 4; off-- {
				p[off] = p[off-1]
			}
			p[4] = readRec{id: recordID{producer: 9, seq: 1}, epoch: 2}
		}, 16, 0, "the acknowledged record is at t/0@5"},
		{"moved to another partition", func(f *readbackFixture) {
			f.got[1][int64(len(f.got[1]))] = f.got[0][7]
			delete(f.got[0], 7)
		}, 1, 0, "the acknowledged record is at t/1@20"},
		{"duplicate of an acknowledged record", func(f *readbackFixture) {
			f.got[0][int64(len(f.got[0]))] = f.got[0][2]
		}, 0, 1, ""},
		{"duplicate of an unacknowledged record", func(f *readbackFixture) {
			r := readRec{id: recordID{producer: 3, seq: 1}, epoch: 1}
			f.got[1][20], f.got[1][21] = r, r
		}, 0, 1, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newReadbackFixture(40)
			tc.mutate(f)
			res := f.check()
			if res.LostRecords != tc.lost || res.Duplicates != tc.dups {
				t.Fatalf("lost %d duplicates %d, want %d and %d; examples %q %q", res.LostRecords, res.Duplicates, tc.lost, tc.dups, res.LostExamples, res.DuplicateExamples)
			}
			if res.Verified+res.LostRecords != 40 {
				t.Fatalf("verified %d + lost %d != 40 acknowledged", res.Verified, res.LostRecords)
			}
			if tc.lostSays != "" && (len(res.LostExamples) == 0 || !strings.Contains(res.LostExamples[0], tc.lostSays)) {
				t.Fatalf("lost examples %q lack %q", res.LostExamples, tc.lostSays)
			}
			if len(res.problems()) == 0 {
				t.Fatal("the run would pass")
			}
			var rep Report
			rep.Failover = res
			rep.checkTargets(Config{})
			for _, tg := range rep.Targets {
				if (tg.Name == "acknowledged records lost" && tc.lost > 0 || tg.Name == "records at more than one offset" && tc.dups > 0) && tg.Met {
					t.Fatalf("target %q met", tg.Name)
				}
			}
		})
	}
}

// TestFailoverReadbackFailureIsNotZeroLost: when the read-back fails, the
// run must fail and the report must not show "0 lost" as a met target.
func TestFailoverReadbackFailureIsNotZeroLost(t *testing.T) {
	res := &FailoverResult{Acked: 500, Unverified: 500}
	if len(res.problems()) == 0 {
		t.Fatal("an unverified run passes")
	}
	var rep Report
	rep.Failover = res
	rep.checkTargets(Config{})
	found := false
	for _, tg := range rep.Targets {
		if tg.Name == "acknowledged records lost" {
			found = true
			if tg.Met {
				t.Fatalf("lost target met with nothing verified: %+v", tg)
			}
		}
	}
	if !found {
		t.Fatalf("no lost-records target: %+v", rep.Targets)
	}
}

// TestFailoverNothingAcknowledged: "0 lost" of 0 acknowledged records is
// no evidence; the run fails and the target is not met.
func TestFailoverNothingAcknowledged(t *testing.T) {
	res := newReadbackFixture(0).check()
	if len(res.problems()) == 0 {
		t.Fatal("a run without acknowledgements passes")
	}
	rep := Report{Failover: res}
	rep.checkTargets(Config{})
	for _, tg := range rep.Targets {
		if tg.Met {
			t.Errorf("%s met with nothing acknowledged", tg.Name)
		}
	}
}

// TestFailoverUnavailability: the window runs from the kill to the first
// acknowledgement of a partition 0 record written by a later leader epoch;
// the victim's own late answers, other partitions and records that did not
// survive do not end it.
func TestFailoverUnavailability(t *testing.T) {
	f := &readbackFixture{start: time.Unix(1000, 0), got: map[int32]map[int64]readRec{0: {}, 1: {}}}
	ms := func(n int) time.Time { return f.start.Add(time.Duration(n) * time.Millisecond) }
	seq := uint64(0)
	ack := func(part int32, epoch int32, at int) int64 {
		seq++
		return f.ack(part, recordID{seq: seq}, epoch, ms(at))
	}
	ack(0, 3, 0)
	ack(0, 3, 90)  // before the kill
	ack(0, 3, 120) // after the kill, but the victim's (epoch 3) answer
	ack(1, 5, 150) // after the kill, another partition
	lost := ack(0, 4, 200)
	ack(0, 4, 400) // the first surviving new-epoch partition 0 ack
	ack(0, 4, 450)
	// A second trial: killed at 1000, new epoch 5 at 1700.
	ack(0, 4, 1100) // the victim's (epoch 4) late answer
	ack(0, 5, 1700)
	// The record acknowledged at 200 was lost (the readback holds another there).
	f.got[0][lost] = readRec{id: recordID{producer: 1, seq: 1}, epoch: 4}

	trials := []FailoverTrial{
		{Trial: 1, Victim: 1, OldEpoch: 3, UnavailableMs: 77, killAt: ms(100)},
		{Trial: 2, Victim: 2, OldEpoch: 4, UnavailableMs: 77, killAt: ms(1000)},
		{Trial: 3, Victim: -1, UnavailableMs: -1}, // never killed
		// Chosen from stale metadata: epoch 3 was acknowledging before the
		// kill of the epoch-2 "leader", so the kill measured nothing.
		{Trial: 4, Victim: 3, OldEpoch: 2, UnavailableMs: 5, killAt: ms(100)},
	}
	res := f.check(trials...)
	if got := res.Trials[0].UnavailableMs; got != 300 {
		t.Errorf("trial 1: unavailable %v ms, want 300", got)
	}
	if got := res.Trials[1].UnavailableMs; got != 700 {
		t.Errorf("trial 2: unavailable %v ms, want 700", got)
	}
	if got := res.Trials[2].UnavailableMs; got != -1 {
		t.Errorf("trial 3: unavailable %v ms, want -1", got)
	}
	if tr := res.Trials[3]; tr.UnavailableMs != -1 || !strings.Contains(tr.Error, "was not partition 0's leader at the kill") {
		t.Errorf("trial 4 (stale victim): unavailable %v ms, error %q", tr.UnavailableMs, tr.Error)
	}
	for _, tr := range res.Trials[:3] {
		if tr.Error != "" {
			t.Errorf("trial %d: error %q", tr.Trial, tr.Error)
		}
	}
	if res.LostRecords != 1 {
		t.Errorf("lost %d, want 1", res.LostRecords)
	}

	// Without any new-epoch acknowledgement the trial has no figure.
	f2 := &readbackFixture{start: f.start, got: map[int32]map[int64]readRec{0: {}, 1: {}}}
	f2.ack(0, recordID{seq: 1}, 3, ms(500))
	res = f2.check(FailoverTrial{Trial: 1, Victim: 1, OldEpoch: 3, UnavailableMs: 20, killAt: ms(100)})
	if got := res.Trials[0].UnavailableMs; got != -1 {
		t.Errorf("no new-epoch ack: unavailable %v ms, want -1", got)
	}
}

// TestFailoverTargetsNeedEveryTrial: a trial in which writes never resumed
// has no unavailability figure; the percentiles over the other trials must
// not meet the target.
func TestFailoverTargetsNeedEveryTrial(t *testing.T) {
	res := &FailoverResult{Acked: 10, Verified: 10}
	for i, u := range []float64{100, 120, -1, 110} {
		res.Trials = append(res.Trials, FailoverTrial{Trial: i + 1, FenceMs: 50, NewLeaderMs: 60, UnavailableMs: u, RejoinMs: 500})
	}
	res.summarize()
	if u := res.UnavailableMs; u.N != 3 || u.Missing != 1 || u.Max != 120 {
		t.Fatalf("unavailability summary %+v", u)
	}
	// From the new leader (60 ms) to the first ack: 40, 60, none, 50 ms.
	if a := res.AckAfterLeaderMs; a.N != 3 || a.Missing != 1 || a.P50 != 50 || a.Max != 60 || res.Trials[2].AckAfterLeaderMs != -1 {
		t.Fatalf("new leader → first ack summary %+v, trial 3 %v", a, res.Trials[2].AckAfterLeaderMs)
	}
	var rep Report
	rep.Failover = res
	rep.checkTargets(Config{})
	n := 0
	for _, tg := range rep.Targets {
		if strings.HasPrefix(tg.Name, "failover unavailability") {
			n++
			if tg.Met {
				t.Errorf("%s met with a trial missing", tg.Name)
			}
		}
	}
	if n != 2 {
		t.Fatalf("unavailability targets: %+v", rep.Targets)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	if !strings.Contains(b.String(), "1 more trial(s) without a figure") {
		t.Errorf("table does not say a trial is missing:\n%s", b.String())
	}

	// Every trial measured and fast: met.
	res.Trials[2].UnavailableMs = 130
	res.summarize()
	rep = Report{Failover: res}
	rep.checkTargets(Config{})
	for _, tg := range rep.Targets {
		if !tg.Met {
			t.Errorf("%s not met: %+v", tg.Name, tg)
		}
	}
}

// TestSummarizeNearestRank: p99 of fewer than 100 trials is the maximum,
// never an interpolation below it.
func TestSummarizeNearestRank(t *testing.T) {
	xs := []float64{10, 20, 30, 40, 50, 60, 70, 80, 90, 1000}
	s := summarize(xs)
	if s.P99 != 1000 || s.Max != 1000 || s.P50 != 50 || s.N != 10 {
		t.Fatalf("%+v", s)
	}
	var hundred []float64
	for i := 1; i <= 100; i++ {
		hundred = append(hundred, float64(i))
	}
	if s := summarize(hundred); s.P99 != 99 || s.P50 != 50 || s.Max != 100 {
		t.Fatalf("1..100: %+v", s)
	}
	if s := summarizeTrials([]float64{-1, 5, -1}); s.N != 1 || s.Missing != 2 || s.P99 != 5 {
		t.Fatalf("with missing: %+v", s)
	}
}

// TestReadBackWaitsForAcknowledgedEnds: the read-back waits until every
// partition's HW covers its largest acknowledged offset.
func TestReadBackWaitsForAcknowledgedEnds(t *testing.T) {
	want := ackedEnds([]ackRec{{part: 0, offset: 4}, {part: 0, offset: 9}, {part: 2, offset: 0}})
	if want[0] != 10 || want[2] != 1 || len(want) != 2 {
		t.Fatalf("ackedEnds %v", want)
	}
	tp := func(p int32) client.TopicPartition { return client.TopicPartition{Topic: "t", Partition: p} }
	if s := endsShort("t", map[client.TopicPartition]int64{tp(0): 10, tp(1): 0, tp(2): 5}, want); len(s) != 0 {
		t.Fatalf("short %v", s)
	}
	s := endsShort("t", map[client.TopicPartition]int64{tp(0): 9, tp(1): 0}, want)
	if len(s) != 2 || !strings.Contains(s[0], "t/0: HW 9, acknowledged up to 9") || !strings.Contains(s[1], "t/2: no end offset") {
		t.Fatalf("short %q", s)
	}
}
