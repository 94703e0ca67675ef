package bench

import (
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

func TestRollOrderControllerLast(t *testing.T) {
	for _, c := range []struct {
		ids  []int32
		ctrl int32
		want []int32
	}{
		{[]int32{1, 2, 3}, 1, []int32{2, 3, 1}},
		{[]int32{3, 1, 2}, 2, []int32{1, 3, 2}},
		{[]int32{1, 2, 3}, 3, []int32{1, 2, 3}},
		{[]int32{2, 1, 3}, -1, []int32{1, 2, 3}}, // no controller: by id
		{[]int32{1, 2, 3}, 7, []int32{1, 2, 3}},  // not one of them
		{[]int32{5}, 5, []int32{5}},
	} {
		ids := slices.Clone(c.ids)
		if got := rollOrder(c.ids, c.ctrl); !slices.Equal(got, c.want) {
			t.Errorf("rollOrder(%v, %d) = %v, want %v", c.ids, c.ctrl, got, c.want)
		}
		if !slices.Equal(ids, c.ids) {
			t.Errorf("rollOrder changed its argument: %v", c.ids)
		}
	}
}

func TestWindowsOfTileTheRoll(t *testing.T) {
	at := func(n int) time.Time { return time.Unix(100, 0).Add(time.Duration(n) * time.Millisecond) }
	got := windowsOf([]time.Time{at(10), at(50), at(90)}, at(200))
	want := []window{{at(10), at(50)}, {at(50), at(90)}, {at(90), at(200)}}
	if !slices.Equal(got, want) {
		t.Fatalf("windows %v, want %v", got, want)
	}
}

// TestLongestGap: a gap belongs to the window where writes resumed, whole
// (from the last acknowledgement before it, even before the window); one
// ending after the window is the next window's; one never closed runs to
// the window's end.
func TestLongestGap(t *testing.T) {
	at := func(n int) time.Time { return time.Unix(100, 0).Add(time.Duration(n) * time.Millisecond) }
	ts := func(ns ...int) []time.Time {
		var out []time.Time
		for _, n := range ns {
			out = append(out, at(n))
		}
		return out
	}
	w := window{at(100), at(200)}
	for _, c := range []struct {
		name  string
		times []time.Time
		want  time.Duration
	}{
		{"steady", ts(90, 100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200, 210), 10 * time.Millisecond},
		{"stall across the start", ts(0, 40, 130, 140, 150, 160, 170, 180, 190, 210), 90 * time.Millisecond},
		{"stall across the end: the next window's", ts(95, 105, 115, 190, 290, 300), 75 * time.Millisecond},
		{"longer gaps outside do not count", ts(0, 98, 102, 110, 120, 130, 140, 150, 160, 170, 180, 190, 201, 400), 10 * time.Millisecond},
		{"no ack after the start: open to the end", ts(50, 90), 110 * time.Millisecond},
		{"no ack at all", nil, 100 * time.Millisecond},
		{"no ack before: from the start", ts(160, 170, 180, 190, 200, 500), 60 * time.Millisecond},
		{"ack at the start", ts(100, 130, 200), 30 * time.Millisecond},
	} {
		got, gap := longestGap(c.times, w)
		if got != c.want || gap.to.Sub(gap.from) != got || (got > 0 && gap.to.Before(w.from)) {
			t.Errorf("%s: %v (%v), want %v", c.name, got, gap, c.want)
		}
	}
}

func TestBelowMinISR(t *testing.T) {
	at := func(n int) time.Time { return time.Unix(100, 0).Add(time.Duration(n) * time.Millisecond) }
	md := func(isrs ...[]int32) *wire.MetadataResponse {
		var ps []wire.PartitionMetadata
		for i, isr := range isrs {
			ps = append(ps, wire.PartitionMetadata{Partition: int32(i), ISR: isr})
		}
		return &wire.MetadataResponse{Topics: []wire.TopicMetadata{{Name: "t", Partitions: ps},
			{Name: "other", Partitions: []wire.PartitionMetadata{{Partition: 0, ISR: []int32{1}}}}}}
	}
	full, two, one := []int32{1, 2, 3}, []int32{1, 2}, []int32{1}
	views := []view{
		{at: at(0), md: md(one, full)},   // before the window: holds from its start
		{at: at(120), md: md(two, full)}, // 20 ms below (partition 0)
		{at: at(150), md: md(full, one)}, // partition 1 below
		{at: at(170), md: md(full, two)}, // 20 ms more
		{at: at(300), md: md(one, one)},  // after the window
	}
	d, parts := belowMinISR(views, "t", 2, window{at(100), at(200)})
	if d != 40*time.Millisecond || !slices.Equal(parts, []int32{0, 1}) {
		t.Fatalf("below min ISR %v in %v, want 40ms in [0 1]", d, parts)
	}
	if d, parts := belowMinISR(views[1:2], "t", 2, window{at(100), at(200)}); d != 0 || len(parts) != 0 {
		t.Fatalf("a window never below: %v %v", d, parts)
	}
}

// TestRollingMeasure: each stopped restart's figures come from its own
// window; a lost record does not end a gap; a restart that was never
// stopped has none; the baseline is before the first SIGTERM.
func TestRollingMeasure(t *testing.T) {
	at := func(n int) time.Time { return time.Unix(100, 0).Add(time.Duration(n) * time.Millisecond) }
	got := map[int32]map[int64]readRec{0: {}, 1: {}}
	var acks []ackRec
	var times []time.Time
	var lats []latencyAt
	seq := uint64(0)
	ack := func(part int32, ms int, lat time.Duration) {
		seq++
		off := int64(len(got[part]))
		acks = append(acks, ackRec{part: part, offset: off, id: recordID{seq: seq}})
		times = append(times, at(ms))
		got[part][off] = readRec{id: recordID{seq: seq}, epoch: 1}
		lats = append(lats, latencyAt{at(ms), lat})
	}
	// Baseline 0..100 every 10 ms; the first restart stops at 100 and
	// partition 0 stalls 100..160; the second stops at 300 and partition 1
	// stalls 290..380, with one acknowledgement at 330 that the read-back
	// does not hold (lost); the load ends at 500.
	for ms := 0; ms <= 500; ms += 10 {
		lat := 5 * time.Millisecond
		if ms == 160 {
			lat = 70 * time.Millisecond
		}
		if ms < 100 || ms >= 160 {
			ack(0, ms, lat)
		}
		if ms <= 290 || ms >= 380 {
			ack(1, ms, 5*time.Millisecond)
		}
	}
	ack(1, 330, 40*time.Millisecond)
	got[1][int64(len(got[1])-1)] = readRec{id: recordID{producer: 9}}
	res := &RollingResult{Topic: "t", Partitions: 2, MinISR: 2, Planned: 3, Restarts: []RollingRestart{
		{Node: 2, stopAt: at(100), causesAtStop: map[string]uint64{"NotLeader": 1}, UnavailableMs: -1},
		{Node: 3, stopAt: at(300), causesAtStop: map[string]uint64{"NotLeader": 4, "NoAnswer": 2}, UnavailableMs: -1},
		{Node: 1, UnavailableMs: -1, UnavailablePartition: -1, Error: "never safe to stop"},
	}}
	res.measure(acks, times, got, nil, lats, at(0), at(500), map[string]uint64{"NotLeader": 4, "NoAnswer": 5, "NotEnoughReplicas": 1})
	if res.LostRecords != 1 || res.Verified != int64(len(acks)-1) {
		t.Fatalf("lost %d verified %d of %d", res.LostRecords, res.Verified, len(acks))
	}
	r1, r2, r3 := res.Restarts[0], res.Restarts[1], res.Restarts[2]
	if r1.UnavailableMs != 70 || r1.UnavailablePartition != 0 || r1.UnavailableEndMs != 60 || r1.PartitionGapsMs[1] != 10 || r1.MaxProduceLatencyMs != 70 || r1.WindowMs != 200 {
		t.Errorf("restart 1: %+v", r1)
	}
	// The lost ack at 330 does not split partition 1's 290..380 stall.
	if r2.UnavailableMs != 90 || r2.UnavailablePartition != 1 || r2.UnavailableEndMs != 80 || r2.MaxProduceLatencyMs != 40 {
		t.Errorf("restart 2: %+v", r2)
	}
	if want := map[string]uint64{"NotLeader": 3, "NoAnswer": 2}; !equalCounts(r1.ProduceErrors, want) {
		t.Errorf("restart 1 errors %v, want %v", r1.ProduceErrors, want)
	}
	if want := map[string]uint64{"NoAnswer": 3, "NotEnoughReplicas": 1}; !equalCounts(r2.ProduceErrors, want) {
		t.Errorf("restart 2 errors %v, want %v", r2.ProduceErrors, want)
	}
	if r3.UnavailableMs != -1 || r3.PartitionGapsMs != nil {
		t.Errorf("restart 3, never stopped: %+v", r3)
	}
	if res.BaselineGapMs != 10 || res.BaselineMs != 100 || res.BaselineMaxLatencyMs != 5 {
		t.Errorf("baseline: gap %v over %v ms, latency %v", res.BaselineGapMs, res.BaselineMs, res.BaselineMaxLatencyMs)
	}
	res.summarize()
	if u := res.UnavailableMs; u.N != 2 || u.Missing != 1 || u.Max != 90 {
		t.Errorf("unavailability summary %+v", u)
	}
	probs := res.problems()
	var msgs []string
	for _, e := range probs {
		msgs = append(msgs, e.Error())
	}
	all := strings.Join(msgs, "; ")
	for _, want := range []string{"1 acknowledged records lost", "node 1: never safe to stop"} {
		if !strings.Contains(all, want) {
			t.Errorf("problems %q lack %q", all, want)
		}
	}
}

func equalCounts(a, b map[string]uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestRollingProblems: a roll cut short fails the run even without a
// step's error; a clean one passes.
func TestRollingProblems(t *testing.T) {
	clean := &RollingResult{Planned: 3, Acked: 10, Verified: 10, Restarts: make([]RollingRestart, 3)}
	if p := clean.problems(); len(p) != 0 {
		t.Fatalf("clean roll: %v", p)
	}
	short := &RollingResult{Planned: 3, Acked: 10, Verified: 10, Restarts: make([]RollingRestart, 2)}
	if p := short.problems(); len(p) != 1 || !strings.Contains(p[0].Error(), "2 of 3 restarts done") {
		t.Fatalf("short roll: %v", p)
	}
	for _, bad := range []*RollingResult{
		{Planned: 0, Acked: 0},
		{Planned: 0, Acked: 10, Unverified: 10},
		{Planned: 0, Acked: 10, Verified: 10, Duplicates: 1},
	} {
		if len(bad.problems()) == 0 {
			t.Errorf("%+v passes", bad)
		}
	}
}

func TestRollingConfig(t *testing.T) {
	if m, err := ParseMode("rolling"); err != nil || m != ModeRolling {
		t.Fatalf("ParseMode(rolling) = %v, %v", m, err)
	}
	if ModeAll.runs(ModeRolling) || !ModeRolling.runs(ModeRolling) || ModeRolling.runs(ModeFailover) {
		t.Fatal("all runs rolling, or rolling runs something else")
	}
	base := DefaultConfig()
	base.Mode, base.Metrics = ModeRolling, true
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	for field, mut := range map[string]func(*Config){
		"bootstrap":   func(c *Config) { c.Bootstrap = []string{"127.0.0.1:1"} },
		"metrics":     func(c *Config) { c.Metrics = false },
		"roll-rounds": func(c *Config) { c.Rolling.Rounds = 0 },
		"nodes":       func(c *Config) { c.Nodes = 2 },
	} {
		c := base
		mut(&c)
		err := c.Validate()
		ce, ok := err.(*ConfigError)
		if !ok || ce.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	// Other modes do not care about --roll-rounds.
	c := DefaultConfig()
	c.Rolling.Rounds = 0
	if err := c.Validate(); err != nil {
		t.Errorf("all with --roll-rounds 0: %v", err)
	}
}
