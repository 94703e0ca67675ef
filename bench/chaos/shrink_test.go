package chaos

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/wire"
)

// shrink is known by name and not in the default mix; a deck deals it
// PerKind times with holds of 0.5–2.5 session timeouts; an event that ran
// counts (it has no victim node) and says what it did, one that was skipped
// does not count.
func TestShrinkKind(t *testing.T) {
	k, err := ParseKinds("all,shrink")
	if err != nil || !slices.Contains(k, Shrink) || len(k) != len(AllKinds)+1 {
		t.Fatalf("%v %v", k, err)
	}
	if all, _ := ParseKinds("all"); slices.Contains(all, Shrink) {
		t.Fatal("all includes shrink")
	}
	if Shrink.IsKill() || Shrink.NeedsNetNS() {
		t.Fatal("shrink classified as a kill or a network fault")
	}
	plan := Plan{Seed: 3, PerKind: 25, Kinds: []Kind{Shrink, KillNode}, SessionTimeout: time.Second}
	faults := NewSchedule(plan).Take(50)
	if again := NewSchedule(plan).Take(50); !reflect.DeepEqual(faults, again) {
		t.Fatal("same seed, different schedules")
	}
	n := 0
	for _, f := range faults {
		if f.Kind != Shrink {
			continue
		}
		n++
		if f.Hold < 500*time.Millisecond || f.Hold > 2500*time.Millisecond || f.Torn != nil {
			t.Fatalf("shrink fault %s", f)
		}
	}
	if n != 25 {
		t.Fatalf("%d shrink faults in a deck of 25 per kind", n)
	}
	ran := Event{Fault: Fault{Kind: Shrink, Hold: time.Second}, Kind: Shrink, At: 3 * time.Second, Healthy: 40 * time.Millisecond}
	skipped := Event{Fault: Fault{Kind: Shrink}, Kind: Shrink, Note: "skipped: no admin client"}
	failed := Event{Fault: Fault{Kind: Shrink}, Kind: Shrink, At: time.Second, NotApplied: true}
	if c := countFaults([]Event{ran, skipped, failed}); c[Shrink] != 1 {
		t.Fatalf("counts %v, want one shrink", c)
	}
	if s := ran.String(); !strings.Contains(s, "shrink           replication factor 3 -> 2 for 1s; ready again after 40ms") {
		t.Fatalf("event line %q", s)
	}
}

// Restoring the replication factor asks again while the controller refuses
// it for too few live brokers (a node fenced by the last fault), and not
// after any other refusal; a refusal that lasts past ctx is returned.
func TestRetryTooFewBrokers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tooFew := wire.InvalidReplicationFactor.Err("replication factor 3: chaos-0 can have at most 2 replicas on the live brokers")
	calls := 0
	err := retryTooFewBrokers(ctx, time.Millisecond, func() error {
		if calls++; calls < 3 {
			return tooFew
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("refused twice for too few brokers, then accepted: %v after %d calls", err, calls)
	}

	calls = 0
	other := wire.UnknownTopicOrPartition.Err("no topic")
	if err := retryTooFewBrokers(ctx, time.Millisecond, func() error { calls++; return other }); err != other || calls != 1 {
		t.Fatalf("another refusal: %v after %d calls, want it at once", err, calls)
	}

	short, cancelShort := context.WithCancel(ctx)
	calls = 0
	err = retryTooFewBrokers(short, time.Millisecond, func() error {
		if calls++; calls == 2 {
			cancelShort()
		}
		return tooFew
	})
	if err != tooFew || calls != 2 {
		t.Fatalf("ctx ended while refused: %v after %d calls, want the refusal after 2", err, calls)
	}
}
