package node

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"paymentlog/node/metadata"
)

// TestDiskStallHoldDownGrowsWithRecurrences: by the injected clock, a
// first stall has no hold-down; one that starts 5 s after the previous
// one's end keeps the node aside 30 s after its operation returns, the
// next (5 s after the node came back) 60 s, then 120 s, and a stall
// during a hold-down 240 s; /readyz and the metrics name the hold-down,
// its start is logged at Warn and its end once at Info; after 10 minutes
// without a stall the next one has none again.
func TestDiskStallHoldDownGrowsWithRecurrences(t *testing.T) {
	r := newStallRig(t)
	n := r.n
	if r.stall(3*time.Second) || n.diskStallReason() != "" {
		t.Fatalf("aside after a first stall: %q", n.diskStallReason())
	}

	// Each 5s after the node came back: 5s after the first stall's end,
	// 35s after the second's (the hold-down and 5s).
	for i, c := range []struct{ gap, want time.Duration }{{5 * time.Second, 30 * time.Second}, {35 * time.Second, 60 * time.Second}} {
		want := c.want
		r.advance(5 * time.Second)
		if !r.stall(3 * time.Second) {
			t.Fatalf("relapse %d: heartbeating right after a stall %v after the previous one's end", i+1, c.gap)
		}
		why := n.diskStallReason()
		if !strings.Contains(why, "disk stall hold-down: the disk stalled again "+c.gap.String()+" after the previous stall ended; heartbeats held back "+want.String()) {
			t.Fatalf("relapse %d: reason %q", i+1, why)
		}
		if s := n.diskStallStats(); s.stalled || s.holdDown != want || s.holdDowns != uint64(i+1) {
			t.Fatalf("relapse %d: stats %+v", i+1, s)
		}
		r.advance(want - time.Second)
		if !n.diskStalled() {
			t.Fatalf("relapse %d: heartbeating %v into a hold-down of %v", i+1, want-time.Second, want)
		}
		r.advance(time.Second)
		if n.diskStalled() || n.diskStallReason() != "" || n.diskStallStats().holdDown != 0 {
			t.Fatalf("relapse %d: still aside at the hold-down's end", i+1)
		}
	}

	// A stall during a hold-down doubles it once more.
	r.advance(5 * time.Second)
	r.stall(3 * time.Second)
	if s := n.diskStallStats(); s.holdDown != 2*time.Minute {
		t.Fatalf("third hold-down: %v, want 2m", s.holdDown)
	}
	r.advance(10 * time.Second)
	r.stall(3 * time.Second)
	if s := n.diskStallStats(); s.holdDown != 4*time.Minute {
		t.Fatalf("hold-down after a stall during one: %v, want 4m", s.holdDown)
	}
	r.advance(4 * time.Minute)
	if n.diskStalled() {
		t.Fatal("aside after the hold-down")
	}

	// Ten quiet minutes: the next stall is a first one again.
	r.advance(relapseWindow)
	if r.stall(3*time.Second) || n.diskStallStats().holdDown != 0 {
		t.Fatal("a hold-down after a stall 10 minutes after the previous one")
	}

	out := r.logs()
	if c := strings.Count(out, "level=WARN msg=\"disk stall over, but the disk stalled again soon after the previous stall"); c != 4 {
		t.Fatalf("%d Warn lines for a hold-down's start, want 4:\n%s", c, out)
	}
	if !strings.Contains(out, "after_previous=5s hold_down=30s") {
		t.Fatalf("the hold-down's line does not say why:\n%s", out)
	}
	if c := strings.Count(out, "level=INFO msg=\"disk stall hold-down over: heartbeating"); c != 3 {
		t.Fatalf("%d Info lines for a hold-down's end, want 3:\n%s", c, out)
	}
	if c := strings.Count(out, "level=INFO msg=\"disk stall over: heartbeating"); c != 2 {
		t.Fatalf("%d Info lines for a stall without hold-down, want 2:\n%s", c, out)
	}
}

// TestDiskStallHoldDownCutShortBelowMinISR: a hold-down holds while the
// partitions the node replicates keep min.insync.replicas without it, and
// ends for good (logged once at Warn) once one falls below: the cluster
// needs the node, whose disk works again.
func TestDiskStallHoldDownCutShortBelowMinISR(t *testing.T) {
	r := newStallRig(t)
	n := r.n
	n.cfg.ID = 1
	n.store = metadata.NewStore()
	applyTopic(t, n.store, 1, "payments", []int32{1, 2, 3}, []int32{2, 3})
	r.stall(3 * time.Second)
	r.advance(5 * time.Second)
	if !r.stall(3 * time.Second) {
		t.Fatal("no hold-down with the ISRs at min.insync.replicas without the node")
	}
	r.advance(time.Second)
	if !n.diskStalled() {
		t.Fatal("the hold-down ended with the ISRs at min.insync.replicas")
	}
	applyTopic(t, n.store, 2, "refunds", []int32{1, 2, 3}, []int32{3})
	if n.diskStalled() || n.diskStallReason() != "" || n.diskStallStats().holdDown != 0 {
		t.Fatal("still aside with refunds-0 below min.insync.replicas")
	}
	applyTopic(t, n.store, 3, "chargebacks", []int32{2, 3}, []int32{2, 3}) // the ISRs healthy again
	if n.diskStalled() {
		t.Fatal("a hold-down cut short came back")
	}
	if c := strings.Count(r.logs(), `level=WARN msg="disk stall hold-down cut short: a partition this node replicates is below min.insync.replicas, so it heartbeats again" partition="refunds-0 (ISR [3], min.insync.replicas 2)"`); c != 1 {
		t.Fatalf("%d Warn lines for the hold-down cut short, want 1:\n%s", c, r.logs())
	}
}

// applyTopic applies, at metadata offset index, a topic of one partition
// with min.insync.replicas 2.
func applyTopic(t *testing.T, s *metadata.Store, index uint64, name string, replicas, isr []int32) {
	t.Helper()
	id := fmt.Sprintf("%032x", index)
	data, err := metadata.EncodeEntry(
		metadata.TopicCreated{Name: name, ID: id, Partitions: 1, RF: int32(len(replicas)), MinISR: 2},
		metadata.PartitionCreated{Topic: name, TopicID: id, Partition: 0, Replicas: replicas, ISR: isr, Leader: isr[0]})
	if err != nil {
		t.Fatal(err)
	}
	s.Apply(index, data)
	if _, ok := s.Image().Topic(name); !ok || s.Err() != nil {
		t.Fatalf("topic %s not applied: %v", name, s.Err())
	}
}
