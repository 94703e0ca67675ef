package raftnode

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// A learner added after the log was compacted can only catch up from a
// snapshot, and a snapshot taken before it was added does not list it:
// raft refuses to restore such a snapshot ("not in the ConfState"). The
// node snapshots again once a conf change is applied, so the learner gets
// one that lists it, instead of waiting SnapshotEvery more entries.
func TestLearnerAddedAfterCompactionCatchesUp(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotEvery = 20
		cfg.CatchUpEntries = 2
	})
	c.startVoters()
	lead := c.leader()
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("c%d", i))
		c.propose(lead, want[len(want)-1])
	}
	ln := c.nodes[lead]
	var first uint64
	if err := ln.do(context.Background(), func() { first = ln.st.first }); err != nil {
		t.Fatal(err)
	}
	if first <= 1 {
		t.Fatalf("log not compacted (first index %d)", first)
	}
	c.start(4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := ln.AddLearner(ctx, 4, addrOf(4)); err != nil {
		t.Fatalf("AddLearner: %v", err)
	}
	want = append(want, "after-learner")
	c.propose(lead, "after-learner")
	c.waitApplied(ln.Status().Applied)
	c.checkSame(want)
	// Once a snapshot lists the learner, snapshots are spaced as before.
	var snap uint64
	if err := ln.do(context.Background(), func() { snap = ln.st.snapshotIndex() }); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		want = append(want, fmt.Sprintf("d%d", i))
		c.propose(lead, want[len(want)-1])
	}
	c.waitApplied(ln.Status().Applied)
	c.checkSame(want)
	var again uint64
	if err := ln.do(context.Background(), func() { again = ln.st.snapshotIndex() }); err != nil {
		t.Fatal(err)
	}
	if again != snap {
		t.Fatalf("snapshot moved from %d to %d within 5 entries (SnapshotEvery 20)", snap, again)
	}
}
