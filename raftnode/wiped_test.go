package raftnode

import "testing"

// A follower whose disk was wiped restarts with an empty log while the
// leader still believes it holds everything up to its old match index. The
// leader's heartbeat carries commit = min(match, commit), beyond the
// follower's last index; etcd raft panics on that ("tocommit(n) is out of
// range"), which kills the process, and after a restart it would panic again
// at the next heartbeat. The node must instead ignore the impossible commit
// index (a lower commit index is always safe). Then it must catch up: the
// leader's progress for it has a match index it no longer has, below which
// etcd raft never probes, so appends are rejected for as long as that leader
// lives; leadership must move to a node that starts probing from scratch.
func TestWipedFollowerSurvivesLeaderHeartbeat(t *testing.T) {
	storageKinds(t, func(t *testing.T, seg bool) {
		c := newTestCluster(t, 3, nil)
		c.segment = seg
		c.startVoters()
		lead := c.leader()
		for _, v := range []string{"a", "b", "c", "d"} {
			c.propose(lead, v)
		}
		c.waitApplied(c.nodes[lead].Status().Applied)
		b := lead%3 + 1
		c.kill(b)
		c.disks[b], c.fss[b] = nil, nil // wiped
		c.start(b)
		c.waitApplied(c.nodes[lead].Status().Applied)
		select {
		case <-c.nodes[b].Done():
			t.Fatalf("node %d stopped: %v", b, c.nodes[b].Err())
		default:
		}
		c.waitApplied(c.propose(c.leader(), "e"))
		c.checkSame([]string{"a", "b", "c", "d", "e"})
	})
}

// The leader hands leadership over for a wiped follower's sake only to a
// voter it has heard from lately: with the first candidate in id order dead,
// a transfer to it would be abandoned and requested again forever, holding
// proposals up each time, and the wiped follower would never catch up.
func TestWipedFollowerCatchesUpWithAVoterDown(t *testing.T) {
	c := newTestCluster(t, 5, nil)
	c.startVoters()
	lead := c.leader()
	for _, v := range []string{"a", "b", "c"} {
		c.propose(lead, v)
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	rest := c.others(lead)
	dead, wiped := rest[0], rest[1]
	c.kill(dead)
	c.kill(wiped)
	c.disks[wiped] = nil
	c.start(wiped)
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.waitApplied(c.propose(c.leader(), "d"))
	c.checkSame([]string{"a", "b", "c", "d"})
}
