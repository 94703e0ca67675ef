package raftnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// A snapshot from the leader that the state machine refuses (here: a
// format it cannot read, as after the leader's upgrade) is dropped before
// raft sees it: nothing is written, the node keeps its previous state and
// keeps running, and Status names the refusal. It used to be written to
// disk first; then Restore failed and stopped the node, and every restart
// failed on the snapshot it had written. Once the state machine accepts the
// snapshot, the node catches up through it.
func TestRefusedSnapshotKeepsPreviousState(t *testing.T) {
	storageKinds(t, func(t *testing.T, segmentLog bool) {
		c := newTestCluster(t, 3, func(cfg *Config) {
			cfg.SnapshotEvery = 10
			cfg.CatchUpEntries = 2
		})
		c.segment = segmentLog
		c.startVoters()
		lead := c.leader()
		lagger := lead%3 + 1
		var before []string
		for i := range 3 {
			before = append(before, fmt.Sprintf("a%d", i))
			c.propose(lead, before[i])
		}
		c.waitApplied(c.nodes[lead].Status().Applied)
		c.kill(lagger)
		want := slices.Clone(before)
		for i := range 30 {
			want = append(want, fmt.Sprintf("b%d", i))
			c.propose(lead, want[len(want)-1])
		}

		sm := &testSM{refuse: errors.New("testsm: snapshot format version 2, this build reads 1")}
		n := c.startSM(lagger, sm)
		refusedTwice := func() bool {
			select {
			case <-n.Done():
				return true
			default:
			}
			sm.mu.Lock()
			defer sm.mu.Unlock()
			return sm.checks >= 2 // the leader sends it again: still running
		}
		c.tickUntil("snapshot refused twice", 300, refusedTwice)
		select {
		case <-n.Done():
			t.Fatalf("node %d stopped on a refused snapshot: %v", lagger, n.Err())
		default:
		}
		if st := n.Status(); !strings.Contains(st.RefusedSnapshot, "refusing snapshot") || !strings.Contains(st.RefusedSnapshot, "format version 2") {
			t.Fatalf("status %+v does not name the refusal", st)
		}
		var snapIdx uint64
		if err := n.do(context.Background(), func() { snapIdx = n.st.snapshotIndex() }); err != nil {
			t.Fatal(err)
		}
		if got := sm.values(); snapIdx != 0 || sm.restoredAt() != 0 || !slices.Equal(got, before) {
			t.Fatalf("after the refusal: snapshot on disk at %d, restored at %d, values %v; want none, none, %v",
				snapIdx, sm.restoredAt(), got, before)
		}

		// Readable now: the node installs it and catches up.
		sm.setRefuse(nil)
		c.waitApplied(c.nodes[lead].Status().Applied)
		c.checkSame(want)
		if sm.restoredAt() == 0 {
			t.Fatal("caught up without the snapshot")
		}
		if st := n.Status(); st.RefusedSnapshot != "" {
			t.Fatalf("refusal still reported after the install: %q", st.RefusedSnapshot)
		}
	})
}
