package raftnode

import "testing"

// TransferLeadership(0) does not pick a voter that just died: it kept the
// match index it had (here the highest, tied with the live follower's and
// first in the voters' order), and the transfer to it would time out at
// every request while the leader asked again. Once the leader has not
// heard from it for an election timeout (raft's RecentActive, with
// CheckQuorum), the live follower is picked, and leads within an election
// timeout: before raft would abandon a transfer.
func TestTransferLeadershipSkipsADeadVoter(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	c.waitApplied(c.propose(lead, "x"))
	dead, live := c.followersOf(lead)
	c.kill(dead)
	for range 2*c.config(lead).ElectionTicks + 2 { // the leader's check of its quorum marks dead inactive
		c.tick()
	}
	if err := c.transferTicking(lead, 0, c.config(lead).ElectionTicks); err != nil {
		t.Fatalf("TransferLeadership: %v", err)
	}
	if got := c.nodes[live].Status(); !got.IsLeader {
		t.Fatalf("node %d, the live follower, does not lead (leader %d)", live, got.Leader)
	}
}
