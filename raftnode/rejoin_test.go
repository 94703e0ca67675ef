package raftnode

import (
	"context"
	"slices"
	"testing"
	"time"
)

// guardFor returns a tune function that sets RejoinGuard on the nodes marked
// in guard (read at every start).
func guardFor(guard map[uint64]bool) func(*Config) {
	return func(cfg *Config) { cfg.RejoinGuard = guard[cfg.ID] }
}

// others returns the voters other than ids, in id order.
func (c *testCluster) others(ids ...uint64) []uint64 {
	var out []uint64
	for _, id := range sortedIDs(c.voters) {
		if !slices.Contains(ids, id) {
			out = append(out, id)
		}
	}
	return out
}

// catchUpTarget is what the node package computes from the DescribeQuorum
// answers of ids: the highest last index and the highest term.
func (c *testCluster) catchUpTarget(ids ...uint64) (index, term uint64) {
	for _, id := range ids {
		st := c.nodes[id].Status()
		index, term = max(index, st.LastIndex), max(term, st.Term)
	}
	return index, term
}

// KIP-853's problem. Entry "acked" is committed on A (the leader) and B while
// C is cut off. B's disk is wiped and B restarts with an empty log; A dies.
// Without a guard B votes at once, C (which lacks "acked") is elected by B's
// vote and a conflicting entry is committed at acked's index: an entry A
// applied and acknowledged is lost. With RejoinGuard, B neither votes nor
// campaigns, so B and C cannot elect anyone; once A is back, A leads, B
// catches up to the target the others report and becomes a voter again.
func TestWipedVoterDoesNotLoseCommittedEntry(t *testing.T) {
	guard := map[uint64]bool{}
	c := newTestCluster(t, 3, guardFor(guard))
	c.startVoters()
	a := c.leader()
	rest := c.others(a)
	b, cc := rest[0], rest[1]
	c.waitApplied(c.propose(a, "before"))

	c.nw.setCut(addrOf(cc), true)
	acked := c.propose(a, "acked") // applied on A: committed on A and B
	// B stored it before A could commit it.
	c.waitLastIndex(b, acked)

	c.kill(b)
	c.disks[b] = nil // wiped: config gives it a new, empty disk
	guard[b] = true
	c.kill(a)
	c.nw.setCut(addrOf(cc), false)
	c.start(b)
	if !c.nodes[b].Status().VoteGuarded {
		t.Errorf("node %d restarted with an empty log is not vote-guarded", b)
	}

	// Ten election timeouts: B and C must not elect a leader (C lacks
	// "acked"; only B's vote could make it leader).
	c.checkNoLeaderWithout(a, acked, "wiped", b, cc)

	// A comes back: A and C elect A (C cannot win without "acked").
	c.start(a)
	lead := c.leader()
	if lead == b {
		t.Fatalf("the wiped node %d was elected", b)
	}
	index, term := c.catchUpTarget(a, cc)
	if err := c.nodes[b].CatchUpTo(context.Background(), index, term); err != nil {
		t.Fatal(err)
	}
	c.tickUntil("wiped node caught up and voting", 200, func() bool { return !c.nodes[b].Status().VoteGuarded })
	if st := c.nodes[b].Status(); st.Commit < index {
		t.Fatalf("guard lifted at commit %d, below the target %d", st.Commit, index)
	}
	c.waitApplied(c.propose(lead, "after"))
	c.checkSame([]string{"before", "acked", "after"})

	// B now counts: with A dead, B and C elect a leader and make progress.
	c.kill(a)
	lead = c.leader()
	c.waitApplied(c.propose(lead, "without a"))
	c.checkSame([]string{"before", "acked", "after", "without a"})
}

// The guard survives a restart before it is lifted: a wiped node that has
// received part of the log (no longer empty) and restarts must still not
// vote. Once lifted it stays lifted across restarts.
func TestRejoinGuardSurvivesRestart(t *testing.T) {
	storageKinds(t, func(t *testing.T, seg bool) {
		guard := map[uint64]bool{}
		c := newTestCluster(t, 3, guardFor(guard))
		c.segment = seg
		c.startVoters()
		lead := c.leader()
		b := c.others(lead)[0]
		for i := range 5 {
			c.propose(lead, string(rune('a'+i)))
		}
		c.waitApplied(c.nodes[lead].Status().Applied)

		c.kill(b)
		c.disks[b], c.fss[b] = nil, nil
		guard[b] = true
		c.start(b)
		c.waitApplied(c.nodes[lead].Status().Applied)
		if !c.nodes[b].Status().VoteGuarded {
			t.Fatalf("node %d: not guarded while no target is known", b)
		}
		c.crash(b)
		c.start(b)
		if !c.nodes[b].Status().VoteGuarded {
			t.Fatalf("node %d: guard forgotten by a restart", b)
		}
		index, term := c.catchUpTarget(c.others(b)...)
		if err := c.nodes[b].CatchUpTo(context.Background(), index, term); err != nil {
			t.Fatal(err)
		}
		c.tickUntil("guard lifted", 200, func() bool { return !c.nodes[b].Status().VoteGuarded })
		c.crash(b)
		c.start(b)
		if c.nodes[b].Status().VoteGuarded {
			t.Fatalf("node %d: guarded again after it was lifted", b)
		}
		// And it votes: with the leader gone, it and the third node elect one.
		c.kill(lead)
		c.waitApplied(c.propose(c.leader(), "after"))
		c.checkSame([]string{"a", "b", "c", "d", "e", "after"})
	})
}

// A guarded node grants no vote and wins no election, even when the leader
// hands leadership to it; message loss is all it costs the others.
func TestGuardedNodeNeitherVotesNorCampaigns(t *testing.T) {
	guard := map[uint64]bool{}
	c := newTestCluster(t, 3, guardFor(guard))
	c.startVoters()
	lead := c.leader()
	c.waitApplied(c.propose(lead, "x"))
	b := c.others(lead)[0]
	c.kill(b)
	c.disks[b] = nil
	guard[b] = true
	c.start(b)
	c.waitApplied(c.nodes[lead].Status().Applied)
	lead = c.leader() // may have moved for b to catch up (lostlog.go)

	// Asked to take over, b campaigns but must not win.
	if err := c.nodes[b].Campaign(context.Background()); err != nil {
		t.Fatal(err)
	}
	ln := c.nodes[lead]
	if err := ln.do(context.Background(), func() { ln.rn.TransferLeader(b) }); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		c.tick()
		if c.nodes[b].Status().IsLeader {
			t.Fatalf("guarded node %d became leader", b)
		}
	}
	// With the leader gone, the third node cannot be elected either (b's
	// vote is withheld), so nothing new commits.
	lead = c.leader()
	c.kill(lead)
	third := c.others(lead, b)[0]
	commit := c.nodes[third].Status().Commit
	for range 300 {
		c.tick()
		for _, id := range []uint64{b, third} {
			if c.nodes[id].Status().IsLeader {
				t.Fatalf("node %d elected with a guarded node's vote", id)
			}
		}
	}
	if got := c.nodes[third].Status().Commit; got != commit {
		t.Fatalf("commit moved from %d to %d without a quorum of trusted voters", commit, got)
	}
}

// A genuine first start: every voter is empty and guarded; the target each
// learns from the others (their bootstrap entries, term 1) is met at once.
func TestFirstStartWithRejoinGuardForms(t *testing.T) {
	guard := map[uint64]bool{1: true, 2: true, 3: true}
	c := newTestCluster(t, 3, guardFor(guard))
	c.startVoters()
	for id := range c.voters {
		index, term := c.catchUpTarget(c.others(id)...)
		if err := c.nodes[id].CatchUpTo(context.Background(), index, term); err != nil {
			t.Fatal(err)
		}
	}
	lead := c.leader()
	for id := range c.voters {
		if c.nodes[id].Status().VoteGuarded {
			t.Fatalf("node %d still guarded after the first election", id)
		}
	}
	c.waitApplied(c.propose(lead, "formed"))
	c.checkSame([]string{"formed"})
}

// waitLastIndex waits until node id has stored index. Its Status is
// published by its loop after it answered, so it may lag a moment.
func (c *testCluster) waitLastIndex(id, index uint64) {
	c.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); c.nodes[id].Status().LastIndex < index; {
		if time.Now().After(deadline) {
			c.t.Fatalf("node %d has last index %d, below the committed %d", id, c.nodes[id].Status().LastIndex, index)
		}
		select {
		case <-c.nodes[id].statusChanged():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkNoLeaderWithout ticks ten election timeouts and fails if one of
// nodes is elected meanwhile: with a, which applied "acked" at index acked,
// away, only the vote of a node that lost that entry (how: "wiped",
// "repaired") could elect one, which then commits a conflicting entry.
func (c *testCluster) checkNoLeaderWithout(a, acked uint64, how string, nodes ...uint64) {
	c.t.Helper()
	for range 20 * 10 {
		c.tick()
		for _, id := range nodes {
			if !c.nodes[id].Status().IsLeader {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			idx, err := c.nodes[id].Propose(ctx, []byte("conflict"))
			cancel()
			c.t.Fatalf("node %d was elected with the %s node's vote; it committed %q at index %d (err %v), "+
				"where node %d had applied %q at index %d: values now %v",
				id, how, "conflict", idx, err, a, "acked", acked, c.sms[id].values())
		}
	}
}
