package raftnode

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

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

// guardedHandoverCluster starts n voters with the rejoin guard for wiped
// nodes, proposes "a", wipes one follower (it catches up but stays
// guarded: no target is set) and returns the cluster, that follower, and
// a count of the MsgTimeoutNow (leadership hand-overs) sent to each node
// from then on; wipe wipes another node.
func guardedHandoverCluster(t *testing.T, n int) (c *testCluster, first uint64, handovers func(id uint64) int, wipe func(id uint64)) {
	t.Helper()
	guard := map[uint64]bool{}
	var mu sync.Mutex
	timeoutNow := map[uint64]int{} // MsgTimeoutNow sent, by recipient
	c = newTestCluster(t, n, func(cfg *Config) {
		guardFor(guard)(cfg)
		queued := cfg.hooks.queued
		cfg.hooks.queued = func(from uint64, m *pb.Message) {
			if m.GetType() == pb.MsgTimeoutNow {
				mu.Lock()
				timeoutNow[m.GetTo()]++
				mu.Unlock()
			}
			queued(from, m)
		}
	})
	c.startVoters()
	lead := c.leader()
	c.waitApplied(c.propose(lead, "a"))
	wipe = func(id uint64) {
		c.kill(id)
		c.disks[id] = nil
		guard[id] = true
		c.start(id)
	}
	first = c.others(lead)[0]
	wipe(first)
	lead = c.leader()
	c.waitApplied(c.nodes[lead].Status().Applied)
	if !c.nodes[first].Status().VoteGuarded {
		t.Fatalf("node %d: not guarded", first)
	}
	mu.Lock()
	clear(timeoutNow)
	mu.Unlock()
	handovers = func(id uint64) int {
		mu.Lock()
		defer mu.Unlock()
		return timeoutNow[id]
	}
	return c, first, handovers, wipe
}

// Two wiped followers of five, the first still vote-guarded when the second
// needs a new leader: a guarded voter ignores the transfer (guard.go), so
// the leader must try another one rather than the same forever.
func TestWipedFollowerCatchesUpPastAGuardedVoter(t *testing.T) {
	c, first, handovers, wipe := guardedHandoverCluster(t, 5)
	// The second: the leader's first choice is the guarded node (lowest id
	// among equally up-to-date voters), which will not take over.
	wipe(c.others(c.leader(), first)[0])
	c.waitApplied(c.nodes[c.leader()].Status().Applied)
	c.waitApplied(c.propose(c.leader(), "b"))
	c.checkSame([]string{"a", "b"})
	if n := handovers(first); n > 1 {
		t.Fatalf("leadership was handed to the guarded node %d %d times", first, n)
	}
}

// A broker-only node (a raft learner) whose disk was replaced restarts with
// no configuration at all; the leader's heartbeat must not kill it, and it
// must get the log again.
func TestWipedLearnerSurvivesAndCatchesUp(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	c.start(4)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.nodes[lead].AddLearner(ctx, 4, addrOf(4)); err != nil {
		t.Fatal(err)
	}
	c.propose(lead, "a")
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.kill(4)
	c.disks[4] = nil
	c.start(4)
	c.waitApplied(c.nodes[c.leader()].Status().Applied)
	select {
	case <-c.nodes[4].Done():
		t.Fatalf("learner stopped: %v", c.nodes[4].Err())
	default:
	}
	c.waitApplied(c.propose(c.leader(), "b"))
	c.checkSame([]string{"a", "b"})
	if st := c.nodes[4].Status(); !slices.Equal(st.Learners, []uint64{4}) {
		t.Fatalf("learner status %+v", st)
	}
}

// With three voters, one wiped and still guarded (no target is set) and a
// second wiped, the leader's only voter to hand leadership to is the
// guarded one, which ignores the hand-over. Each failed transfer holds
// proposals up for an election timeout; the leader retried at once, again
// and again (about once an election timeout, so the metadata log took
// proposals only between transfers). It now waits lostLogRetryTicks
// election timeouts before trying again.
func TestLeaderBacksOffHandingOverToAGuardedVoter(t *testing.T) {
	c, first, handovers, wipe := guardedHandoverCluster(t, 3)
	second := c.others(c.leader(), first)[0]
	wipe(second)
	const ticks = 30 * 10 // 30 election timeouts
	for range ticks {
		c.tick()
	}
	n := handovers(first)
	// At most one try, then one every lostLogRetryTicks election timeouts
	// (and a first retry at once): 5 in 30 election timeouts.
	if limit := 2 + 30/lostLogRetryTicks; n > limit {
		t.Fatalf("leadership was handed to the guarded node %d %d times in %d ticks (limit %d)", first, n, ticks, limit)
	}
	if n == 0 {
		t.Fatalf("the leader never tried to hand leadership over for the wiped node %d", second)
	}
}
