package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestScheduleDeterministic(t *testing.T) {
	a := NewSchedule(Plan{Seed: 42}).Take(250)
	b := NewSchedule(Plan{Seed: 42}).Take(250)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different schedules")
	}
	c := NewSchedule(Plan{Seed: 43}).Take(250)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same schedule")
	}
}

func TestScheduleDeckCounts(t *testing.T) {
	for _, seed := range []int64{1, 2, 3, 99} {
		s := NewSchedule(Plan{Seed: seed, PerKind: 20, SessionTimeout: time.Second})
		if s.DeckSize() != 100 {
			t.Fatalf("deck size %d, want 100", s.DeckSize())
		}
		got := map[Kind]int{}
		for i, f := range s.Take(s.DeckSize()) {
			if f.N != i+1 {
				t.Fatalf("fault %d numbered %d", i+1, f.N)
			}
			got[f.Kind]++
			if f.Torn != nil {
				got[TornTail]++
				if !f.Kind.IsKill() {
					t.Fatalf("torn tail on %s", f.Kind)
				}
				if f.Torn.Partition < LedPartition || f.Torn.Partition >= 3 || f.Torn.Len < 1 || f.Torn.Len > 64 {
					t.Fatalf("bad torn %+v", f.Torn)
				}
				if f.Torn.Partition == MetadataLog && f.Torn.Mode != TornGarbage {
					t.Fatalf("metadata torn mode %s", f.Torn.Mode)
				}
			}
			switch f.Kind {
			case Pause:
				if f.Hold <= time.Second {
					t.Fatalf("pause of %v is not longer than the session timeout", f.Hold)
				}
			case KillNode, KillLeader, KillController:
				if f.Hold < 50*time.Millisecond || f.Hold > 800*time.Millisecond {
					t.Fatalf("kill hold %v", f.Hold)
				}
			}
			if f.Gap < 50*time.Millisecond || f.Gap > 500*time.Millisecond {
				t.Fatalf("gap %v", f.Gap)
			}
		}
		for _, k := range AllKinds {
			if got[k] != 20 {
				t.Fatalf("seed %d: %s scheduled %d times, want 20 (%v)", seed, k, got[k], got)
			}
		}
	}
}

func TestScheduleWithoutPartitions(t *testing.T) {
	s := NewSchedule(Plan{Seed: 5, PerKind: 3, Kinds: []Kind{KillNode, Pause, TornTail}})
	got := map[Kind]int{}
	for _, f := range s.Take(s.DeckSize() * 2) {
		got[f.Kind]++
		if f.Torn != nil {
			got[TornTail]++
		}
	}
	want := map[Kind]int{KillNode: 6, Pause: 6, TornTail: 6}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestParseKinds(t *testing.T) {
	k, err := ParseKinds("kill-node,pause")
	if err != nil || !reflect.DeepEqual(k, []Kind{KillNode, Pause}) {
		t.Fatalf("%v %v", k, err)
	}
	if _, err := ParseKinds("kill-node,bogus"); err == nil {
		t.Fatal("bogus kind accepted")
	}
	if k, _ := ParseKinds("all"); len(k) != len(AllKinds) {
		t.Fatal(k)
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, id := range []RecordID{{0, 0}, {3, 123456}, {12, 1}} {
		for _, pad := range []int{0, 10} {
			got, ok := ParsePayload(Payload(id, pad))
			if !ok || got != id {
				t.Fatalf("%v pad %d: got %v %v", id, pad, got, ok)
			}
		}
	}
	for _, bad := range []string{"", "p", "x1-2", "p-1", "p1-", "p1-x", "pa-1", "p1-2x"} {
		if _, ok := ParsePayload([]byte(bad)); ok {
			t.Fatalf("%q parsed", bad)
		}
	}
}

func TestScheduleTargets(t *testing.T) {
	got := map[Target]int{}
	for _, f := range NewSchedule(Plan{Seed: 11}).Take(100) {
		if f.Kind != Pause && f.Kind != NetPartition {
			if f.Target != TargetRandom {
				t.Fatalf("%s with target %q", f.Kind, f.Target)
			}
			continue
		}
		got[f.Target]++
	}
	for _, tg := range []Target{TargetRandom, TargetController, TargetLeader} {
		if got[tg] == 0 {
			t.Fatalf("no pause/partition aimed at %q: %v", tg, got)
		}
	}
}
