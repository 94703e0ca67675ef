package chaos

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/bench/localcluster"
)

// TestParseNetKinds: the link kinds are known by name and as "net", and
// "all" (the default mix) does not include them.
func TestParseNetKinds(t *testing.T) {
	k, err := ParseKinds("one-way,bridge,degrade,kill-leader")
	if err != nil || !reflect.DeepEqual(k, []Kind{OneWay, Bridge, Degrade, KillLeader}) {
		t.Fatalf("%v %v", k, err)
	}
	if k, err := ParseKinds("net,kill-leader"); err != nil || !reflect.DeepEqual(k, []Kind{OneWay, Bridge, Degrade, KillLeader}) {
		t.Fatalf("net: %v %v", k, err)
	}
	all, _ := ParseKinds("all")
	for _, nk := range NetKinds {
		if slices.Contains(all, nk) {
			t.Fatalf("all includes %s", nk)
		}
		if !nk.NeedsNetNS() || !nk.IsLink() || nk.IsKill() {
			t.Fatalf("%s: needs netns %v, link %v, kill %v", nk, nk.NeedsNetNS(), nk.IsLink(), nk.IsKill())
		}
	}
	if !NetPartition.NeedsNetNS() || NetPartition.IsLink() || Pause.NeedsNetNS() {
		t.Fatal("partition/pause classification")
	}
}

// TestScheduleNetKinds: a deck of link faults holds each kind PerKind
// times, with targets, directions, peers and link parameters in range, and
// the same seed deals the same faults.
func TestScheduleNetKinds(t *testing.T) {
	plan := Plan{Seed: 7, PerKind: 30, Kinds: []Kind{OneWay, Bridge, Degrade, KillLeader}, SessionTimeout: time.Second}
	s := NewSchedule(plan)
	faults := s.Take(s.DeckSize())
	if again := NewSchedule(plan).Take(s.DeckSize()); !reflect.DeepEqual(faults, again) {
		t.Fatal("same seed, different schedules")
	}
	got := map[Kind]int{}
	dirs := map[localcluster.Direction]int{}
	targets := map[Target]int{}
	for _, f := range faults {
		got[f.Kind]++
		if f.Kind.IsLink() {
			targets[f.Target]++
		}
		switch f.Kind {
		case OneWay:
			dirs[f.Dir]++
			if f.Hold < 500*time.Millisecond || f.Hold > 2500*time.Millisecond {
				t.Fatalf("one-way hold %v", f.Hold)
			}
		case Bridge:
			if f.PeerPick < 0 || f.Hold < 500*time.Millisecond || f.Hold > 2500*time.Millisecond {
				t.Fatalf("bridge %+v", f)
			}
		case Degrade:
			q := f.Link
			if q == nil || q.Loss < 0.05 || q.Loss > 0.30 || q.Duplicate < 0 || q.Duplicate > 0.05 || q.Reorder < 0 || q.Reorder > 0.25 ||
				q.RateBits < 1_000_000 || q.RateBits > 6_000_000 || q.Latency < 20*time.Millisecond || q.Latency > 200*time.Millisecond {
				t.Fatalf("degrade link %+v", q)
			}
			if f.Hold < 2*time.Second || f.Hold > 6*time.Second {
				t.Fatalf("degrade hold %v", f.Hold)
			}
		}
		if !f.Kind.IsLink() && (f.Dir != "" || f.Link != nil) {
			t.Fatalf("%s carries link parameters", f.Kind)
		}
	}
	for _, k := range plan.Kinds {
		if got[k] != 30 {
			t.Fatalf("%s scheduled %d times, want 30 (%v)", k, got[k], got)
		}
	}
	if dirs[localcluster.Outbound] == 0 || dirs[localcluster.Inbound] == 0 {
		t.Fatalf("one-way directions %v", dirs)
	}
	for _, tg := range []Target{TargetRandom, TargetController, TargetLeader} {
		if targets[tg] == 0 {
			t.Fatalf("no link fault aimed at %q: %v", tg, targets)
		}
	}
}

// TestScheduleWithoutNetKindsUnchanged: the link kinds draw from the
// generator only when scheduled, so the schedule of a seed with the
// default kinds is what it was before they existed (pinned here by the
// first faults of seed 42).
func TestScheduleWithoutNetKindsUnchanged(t *testing.T) {
	var got []string
	for _, f := range NewSchedule(Plan{Seed: 42}).Take(4) {
		got = append(got, f.String())
	}
	want := scheduleSeed42
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seed 42's schedule changed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestChoosePeer(t *testing.T) {
	ids := []int32{1, 2, 3}
	for _, tc := range []struct {
		victim int32
		pick   int
		want   int32
	}{{1, 0, 2}, {1, 1, 3}, {2, 0, 1}, {2, 3, 3}, {3, 4, 1}} {
		if got := choosePeer(tc.victim, ids, tc.pick); got != tc.want {
			t.Errorf("choosePeer(%d, pick %d) = %d, want %d", tc.victim, tc.pick, got, tc.want)
		}
	}
	if got := choosePeer(1, []int32{1}, 5); got != 0 {
		t.Errorf("no other node: %d", got)
	}
}

// TestLinkFaultEvents: link faults are counted by kind, one-way ones by
// direction too, and their event lines say what was done.
func TestLinkFaultEvents(t *testing.T) {
	q := &localcluster.LinkQuality{Loss: 0.1}
	events := []Event{
		{Fault: Fault{Kind: OneWay, Dir: localcluster.Outbound}, Victim: 1, Target: "random"},
		{Fault: Fault{Kind: OneWay, Dir: localcluster.Inbound}, Victim: 2, Target: "active controller"},
		{Fault: Fault{Kind: OneWay, Dir: localcluster.Inbound}, Victim: 2, NotApplied: true},
		{Fault: Fault{Kind: Bridge}, Victim: 3, Peer: 1, Target: "random"},
		{Fault: Fault{Kind: Degrade, Link: q}, Victim: 1, Target: "leader of partition 0"},
		{Fault: Fault{Kind: Degrade, Link: q}, Note: "skipped: no network namespaces"},
	}
	want := map[Kind]int{OneWay: 2, Bridge: 1, Degrade: 1}
	if got := countFaults(events); !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if out, in := oneWayByDir(events); out != 1 || in != 1 {
		t.Fatalf("one-way by direction: out %d in %d", out, in)
	}
	for i, sub := range map[int]string{0: "cannot send", 1: "cannot receive", 3: "cut from node 1", 4: "loss 10%"} {
		if s := events[i].String(); !strings.Contains(s, sub) {
			t.Errorf("event %q does not say %q", s, sub)
		}
	}
	r := &Result{Plan: Plan{Kinds: []Kind{OneWay, KillLeader}}, Counts: countFaults(events)}
	kinds := r.reportKinds()
	if !slices.Contains(kinds, OneWay) || !slices.Contains(kinds, Bridge) || !slices.Contains(kinds, KillNode) {
		t.Fatalf("report kinds %v: want the default kinds, the scheduled and the applied link kinds", kinds)
	}
	if slices.Contains((&Result{}).reportKinds(), Degrade) {
		t.Fatal("a run without link faults lists them")
	}
}

// TestLongestByKind: a window is put down to the fault in effect when it
// started (from the fault's start, less a little slack, to the cluster
// being ready after it), not to later faults it overlaps.
func TestLongestByKind(t *testing.T) {
	start := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	events := []Event{
		{Fault: Fault{N: 1, Kind: KillLeader}, Victim: 1, At: 1 * time.Second, Healed: 2 * time.Second, Healthy: 500 * time.Millisecond},
		{Fault: Fault{N: 2, Kind: OneWay}, Victim: 2, At: 5 * time.Second, Healed: 7 * time.Second, Healthy: time.Second},
		{Fault: Fault{N: 3, Kind: Degrade}, Victim: 3, At: 8500 * time.Millisecond, Healed: 9 * time.Second},
		{Fault: Fault{N: 4, Kind: Bridge}, Victim: 1, At: 30 * time.Second, NotApplied: true},
	}
	windows := []Window{
		{Partition: 0, Start: at(950 * time.Millisecond), End: at(2 * time.Second)},        // kill-leader (a record sent just before it)
		{Partition: 1, Start: at(7900 * time.Millisecond), End: at(12 * time.Second)},      // one-way, though it overlaps the degrade
		{Partition: 2, Start: at(6 * time.Second), End: at(6100 * time.Millisecond)},       // one-way, shorter
		{Partition: 0, Start: at(12 * time.Second), End: at(15 * time.Second)},             // after every fault was over
		{Partition: 0, Start: at(30 * time.Second), End: at(40 * time.Second)},             // a fault not applied
		{Partition: 0, Start: at(500 * time.Millisecond), End: at(900 * time.Millisecond)}, // before any fault
	}
	got := longestByKind(events, windows, start)
	want := map[Kind]KindWindow{
		KillLeader: {Window: windows[0], Fault: 1},
		OneWay:     {Window: windows[1], Fault: 2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// scheduleSeed42 is the start of seed 42's default schedule as dealt before
// the link kinds existed (commit b1f348f).
var scheduleSeed42 = []string{
	"#1 kill-node pick=152000571 gap=252ms hold=356ms",
	"#2 kill-leader pick=907987367 gap=117ms hold=700ms torn=cut-acked of partition 0 at 0.009 len 45",
	"#3 pause pick=950542071 gap=224ms hold=1.419s",
	"#4 kill-leader pick=1061666508 gap=125ms hold=392ms",
}
