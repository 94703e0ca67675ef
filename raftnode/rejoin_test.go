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
	if got := c.nodes[b].Status().LastIndex; got < acked {
		t.Fatalf("node %d has last index %d, below the committed %d", b, got, acked)
	}

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
	for range 20 * 10 {
		c.tick()
		for _, id := range []uint64{b, cc} {
			if !c.nodes[id].Status().IsLeader {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			idx, err := c.nodes[id].Propose(ctx, []byte("conflict"))
			cancel()
			t.Fatalf("node %d was elected with the wiped node's vote; it committed %q at index %d (err %v), "+
				"where node %d had applied %q at index %d: values now %v",
				id, "conflict", idx, err, a, "acked", acked, c.sms[id].values())
		}
	}

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
