package raftnode

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"paymentlog/segment"
)

// fillDisk leaves no free byte on node id's file system (writes that need
// space fail with ENOSPC), or gives it room again when full is false.
func (c *testCluster) fillDisk(id uint64, full bool) {
	if !full {
		c.fss[id].SetCapacity(-1)
		return
	}
	c.fss[id].SetCapacity(c.fss[id].Used())
}

func diskFullCluster(t *testing.T) *testCluster {
	requireSegment(t)
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.DiskFullRetry = time.Millisecond
		cfg.Logger = failureLogger(t)
	})
	c.segment = true
	c.startVoters()
	return c
}

// stillRunning fails the test if node id stopped.
func (c *testCluster) stillRunning(id uint64) {
	c.t.Helper()
	select {
	case <-c.nodes[id].Done():
		c.t.Fatalf("node %d stopped: %v", id, c.nodes[id].Err())
	default:
	}
}

// A follower whose disk fills stalls instead of stopping: the other two go
// on committing, and once there is room again it persists what it could
// not, catches up and applies everything once.
func TestDiskFullFollowerStallsAndResumes(t *testing.T) {
	c := diskFullCluster(t)
	lead := c.leader()
	c.propose(lead, "before")
	victim := lead%3 + 1
	c.fillDisk(victim, true)
	c.propose(lead, "during-1")
	idx := c.propose(lead, "during-2")
	c.tickUntil("follower stalled", 50, func() bool { return c.nodes[victim].Status().DiskFull != "" })
	c.stillRunning(victim)
	if st := c.nodes[victim].Status(); st.Applied >= idx || st.Leader != 0 {
		t.Fatalf("stalled follower: applied %d (leader applied %d), leader %d", st.Applied, idx, st.Leader)
	}
	c.fillDisk(victim, false)
	c.waitApplied(c.propose(lead, "after"))
	c.stillRunning(victim)
	if st := c.nodes[victim].Status(); st.DiskFull != "" || st.Leader != lead {
		t.Fatalf("resumed follower: disk full %q, leader %d (want %d)", st.DiskFull, st.Leader, lead)
	}
	c.checkSame([]string{"before", "during-1", "during-2", "after"})
}

// The raft leader's disk fills: it stalls (reports no leader, fails its
// proposals), the other two elect a leader and commit without it, and it
// rejoins as a follower once there is room, with nothing lost or doubled.
func TestDiskFullLeaderStallsAndOthersTakeOver(t *testing.T) {
	c := diskFullCluster(t)
	old := c.leader()
	c.propose(old, "before")
	c.fillDisk(old, true)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_, err := c.nodes[old].Propose(ctx, []byte("refused"))
	cancel()
	if !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("proposal on the full leader: %v, want ErrProposalDropped", err)
	}
	c.stillRunning(old)
	var lead uint64
	c.tickUntil("another leader", 500, func() bool {
		for id, n := range c.nodes {
			if id != old && n.Status().IsLeader {
				lead = id
				return true
			}
		}
		return false
	})
	if st := c.nodes[old].Status(); st.IsLeader || st.Leader != 0 || st.DiskFull == "" {
		t.Fatalf("stalled old leader reports leader %d (is leader %v), disk full %q", st.Leader, st.IsLeader, st.DiskFull)
	}
	c.propose(lead, "during")
	c.fillDisk(old, false)
	c.waitApplied(c.propose(lead, "after"))
	c.stillRunning(old)
	c.tickUntil("old leader follows the new one", 100, func() bool { return c.nodes[old].Status().Leader == lead })
	// "refused" was appended to the stalled leader's log only; the new
	// leader's entries replaced it.
	c.checkSame([]string{"before", "during", "after"})
}

// Persisting a stalled Ready again hands append entries it already stored
// (the first part of a Ready whose append ran out of space): they are
// kept, not truncated and rewritten, which a full disk may refuse.
func TestStorageAppendAgainKeepsStoredEntries(t *testing.T) {
	requireSegment(t)
	fs := segment.NewMemFS()
	d := &testDisk{tb: t, dir: "/data/__cluster_metadata-0", fs: fs}
	s := d.mustOpen()
	mustAppend(t, s, ents(1, 10, 1, "e"))
	fs.SetFault(func(op segment.FaultOp, path string) error {
		if op == segment.OpTruncate || op == segment.OpRename {
			return syscall.ENOSPC
		}
		return nil
	})
	if err := s.append(context.Background(), ents(6, 10, 1, "e")); err != nil {
		t.Fatalf("appending stored entries again: %v", err)
	}
	fs.SetFault(nil)
	mustAppend(t, s, ents(6, 12, 1, "e"))
	checkLog(t, s, 1, 12, constTerm(1), constStr("e"))
	s = d.reopen(s)
	checkLog(t, s, 1, 12, constTerm(1), constStr("e"))
	_ = s.close()
}
