package broker

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// Logs created before the incarnation is registered are marked empty
// across restarts until Registered; a directory missing or holding another
// topic's data holds nothing; logs created after Registered, and those that
// existed before the process, hold what they hold.
func TestEmptyReplicaMarks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() *Broker {
		t.Helper()
		b, err := New(ctx, Config{NodeID: 1, DataDir: dir, Logger: testLogger(t)})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	state := func(topic string, part int32) PartitionState {
		return PartitionState{Topic: topic, TopicID: "id-" + topic, Partition: part, Leader: 2, LeaderEpoch: 1,
			PartitionEpoch: 1, Replicas: []int32{2, 1}, ISR: []int32{2, 1}, MinISR: 1}
	}
	check := func(b *Broker, topic, id string, part int32, want bool) {
		t.Helper()
		if got := b.HoldsNothing(topic, id, part); got != want {
			t.Errorf("%s-%d (id %s): HoldsNothing %t, want %t", topic, part, id, got, want)
		}
	}

	b := open()
	check(b, "pay", "id-pay", 0, true) // no directory yet
	if err := b.ApplyPartition(ctx, state("pay", 0)); err != nil {
		t.Fatal(err)
	}
	check(b, "pay", "id-pay", 0, true)   // created before registration: marked
	check(b, "pay", "id-other", 0, true) // another topic's directory
	b.Close()

	// A crash before the registration: the next process still knows.
	b = open()
	if err := b.ApplyPartition(ctx, state("pay", 0)); err != nil {
		t.Fatal(err)
	}
	check(b, "pay", "id-pay", 0, true)
	if err := b.Registered(); err != nil {
		t.Fatal(err)
	}
	check(b, "pay", "id-pay", 0, false)
	if err := b.ApplyPartition(ctx, state("pay", 1)); err != nil {
		t.Fatal(err)
	}
	check(b, "pay", "id-pay", 1, false) // created by a registered incarnation
	b.Close()

	// A later process before its registration: the logs it finds are
	// not empty; a wiped one is.
	if err := os.RemoveAll(filepath.Join(dir, "pay-1")); err != nil {
		t.Fatal(err)
	}
	b = open()
	defer b.Close()
	for _, p := range []int32{0, 1} {
		if err := b.ApplyPartition(ctx, state("pay", p)); err != nil {
			t.Fatal(err)
		}
	}
	check(b, "pay", "id-pay", 0, false)
	check(b, "pay", "id-pay", 1, true)

	// A node with new storage marks nothing: its registration covers all.
	fresh, err := New(ctx, Config{NodeID: 1, DataDir: t.TempDir(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	fresh.NewStorage()
	if err := fresh.ApplyPartition(ctx, state("pay", 0)); err != nil {
		t.Fatal(err)
	}
	check(fresh, "pay", "id-pay", 0, false)
}
