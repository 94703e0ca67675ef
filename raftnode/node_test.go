package raftnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"
)

func TestThreeNodesElectAndReplicate(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	var want []string
	for i := range 20 {
		v := fmt.Sprintf("v%d", i)
		want = append(want, v)
		// Propose through every node: followers forward to the leader.
		c.propose(uint64(i%3)+1, v)
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.checkSame(want)
	st := c.nodes[lead].Status()
	if !slices.Equal(st.Voters, []uint64{1, 2, 3}) || len(st.Learners) != 0 {
		t.Fatalf("membership %v / %v", st.Voters, st.Learners)
	}
}

func TestLeaderChangesChannel(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	for id, n := range c.nodes {
		select {
		case got := <-n.LeaderChanges():
			if got != lead {
				t.Fatalf("node %d: LeaderChanges gave %d, want %d", id, got, lead)
			}
		default:
			t.Fatalf("node %d: no leader change delivered", id)
		}
	}
}

func TestKillLeaderNothingCommittedLost(t *testing.T) {
	storageKinds(t, func(t *testing.T, segmentLog bool) {
		c := newTestCluster(t, 3, nil)
		c.segment = segmentLog
		c.startVoters()
		lead := c.leader()
		var want []string
		for i := range 10 {
			want = append(want, fmt.Sprintf("a%d", i))
			c.propose(lead, want[len(want)-1])
		}
		c.kill(lead)
		lead2 := c.leader()
		if lead2 == lead {
			t.Fatalf("leader %d survived its death", lead)
		}
		for i := range 10 {
			want = append(want, fmt.Sprintf("b%d", i))
			c.propose(lead2, want[len(want)-1])
		}
		c.waitApplied(c.nodes[lead2].Status().Applied)
		c.checkSame(want)

		// The old leader comes back and catches up.
		c.start(lead)
		c.waitApplied(c.nodes[lead2].Status().Applied)
		c.checkSame(want)
	})
}

func TestRestartAllFromDisk(t *testing.T) {
	storageKinds(t, func(t *testing.T, segmentLog bool) {
		c := newTestCluster(t, 3, nil)
		c.segment = segmentLog
		c.startVoters()
		lead := c.leader()
		var want []string
		for i := range 15 {
			want = append(want, fmt.Sprintf("x%d", i))
			c.propose(lead, want[len(want)-1])
		}
		applied := c.nodes[lead].Status().Applied
		c.waitApplied(applied)
		for id := range c.voters {
			c.crash(id)
		}
		c.startVoters()
		c.waitApplied(applied)
		c.checkSame(want)
		lead = c.leader()
		want = append(want, "after")
		c.propose(lead, "after")
		c.waitApplied(c.nodes[lead].Status().Applied)
		c.checkSame(want)
	})
}

func TestLearnerReceivesLog(t *testing.T) {
	storageKinds(t, func(t *testing.T, segmentLog bool) {
		c := newTestCluster(t, 3, nil)
		c.segment = segmentLog
		c.startVoters()
		lead := c.leader()
		var want []string
		for i := range 5 {
			want = append(want, fmt.Sprintf("l%d", i))
			c.propose(lead, want[len(want)-1])
		}
		// A broker-only node starts empty and waits.
		c.start(4)
		c.tick()
		if st := c.nodes[4].Status(); st.Applied != 0 || len(st.Voters) != 0 {
			t.Fatalf("learner before being added: %+v", st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		follower := lead%3 + 1
		if err := c.nodes[follower].AddLearner(ctx, 4, addrOf(4)); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("AddLearner on a follower: %v, want ErrNotLeader", err)
		}
		if err := c.nodes[lead].AddLearner(ctx, 4, addrOf(4)); err != nil {
			t.Fatalf("AddLearner: %v", err)
		}
		if err := c.nodes[lead].AddLearner(ctx, 4, addrOf(4)); err != nil { // idempotent
			t.Fatalf("AddLearner again: %v", err)
		}
		want = append(want, "after-learner")
		c.propose(lead, "after-learner")
		c.waitApplied(c.nodes[lead].Status().Applied)
		c.checkSame(want)
		st := c.nodes[4].Status()
		if !slices.Equal(st.Learners, []uint64{4}) || !slices.Equal(st.Voters, []uint64{1, 2, 3}) || st.Leader != lead {
			t.Fatalf("learner status %+v", st)
		}
		// The learner never becomes leader, and restarts with its state.
		c.kill(4)
		c.start(4)
		c.waitApplied(c.nodes[lead].Status().Applied)
		c.checkSame(want)

		// Removed (an unregistered broker), it gets no more entries; the
		// voters are not removed this way.
		if err := c.nodes[follower].RemoveLearner(ctx, 4); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("RemoveLearner on a follower: %v, want ErrNotLeader", err)
		}
		if err := c.nodes[lead].RemoveLearner(ctx, uint64(follower)); err == nil || !strings.Contains(err.Error(), "is a voter") {
			t.Fatalf("RemoveLearner of a voter: %v", err)
		}
		if err := c.nodes[lead].RemoveLearner(ctx, 4); err != nil {
			t.Fatalf("RemoveLearner: %v", err)
		}
		if err := c.nodes[lead].RemoveLearner(ctx, 4); err != nil { // idempotent
			t.Fatalf("RemoveLearner again: %v", err)
		}
		if st := c.nodes[lead].Status(); len(st.Learners) != 0 || !slices.Equal(st.Voters, []uint64{1, 2, 3}) {
			t.Fatalf("status after removing the learner: %+v", st)
		}
		// The leader stops replicating to it with that entry: the learner
		// may still apply the removal itself (its commit can be on its way
		// when the leader applies it), but nothing after it.
		removedAt := c.nodes[lead].Status().Applied
		c.propose(lead, "after-removal")
		idx := c.nodes[lead].Status().Applied
		c.tickUntil("the voters apply past the removal", 200, func() bool {
			for _, id := range []uint64{1, 2, 3} {
				if c.nodes[id].Status().Applied < idx {
					return false
				}
			}
			return true
		})
		for range 10 { // heartbeats, and appends the learner would get
			c.tick()
		}
		if got := c.nodes[4].Status().Applied; got > removedAt {
			t.Fatalf("the removed learner applied up to %d after its removal at %d", got, removedAt)
		}
	})
}

func TestTransferLeadership(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	c.propose(lead, "x")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	follower := lead%3 + 1
	if err := c.nodes[follower].TransferLeadership(ctx, lead); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("transfer from a follower: %v", err)
	}
	if err := c.transferTicking(lead, 0, 200); err != nil {
		t.Fatalf("TransferLeadership: %v", err)
	}
	lead2 := c.leader()
	if lead2 == lead {
		t.Fatalf("leadership did not move from %d", lead)
	}
	c.propose(lead2, "y")
	c.waitApplied(c.nodes[lead2].Status().Applied)
	c.checkSame([]string{"x", "y"})
}

func TestProposeWithoutLeaderIsDropped(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes[1].Propose(ctx, []byte("early")); !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("propose before any election: %v, want ErrProposalDropped", err)
	}
}

func TestLeadershipLossFailsPendingProposal(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	c.propose(lead, "committed")
	// Cut the leader off: its next proposal cannot commit.
	c.nw.setCut(addrOf(lead), true)
	errc := make(chan error, 1)
	go func() {
		_, err := c.nodes[lead].Propose(context.Background(), []byte("lost"))
		errc <- err
	}()
	var err error
	c.tickUntil("pending proposal failed", 200, func() bool {
		select {
		case err = <-errc:
			return true
		default:
			return false
		}
	})
	if !errors.Is(err, ErrProposalDropped) {
		t.Fatalf("proposal on a deposed leader: %v, want ErrProposalDropped", err)
	}
	c.nw.setCut(addrOf(lead), false)
	lead2 := c.leader()
	c.propose(lead2, "next")
	c.waitApplied(c.nodes[lead2].Status().Applied)
	c.checkSame([]string{"committed", "next"})
}

// A leader cut off with uncommitted entries gets them truncated by the new
// leader's conflicting entries when it rejoins.
func TestConflictingEntriesTruncated(t *testing.T) {
	storageKinds(t, func(t *testing.T, segmentLog bool) {
		c := newTestCluster(t, 3, nil)
		c.segment = segmentLog
		c.startVoters()
		lead := c.leader()
		c.propose(lead, "base")
		c.nw.setCut(addrOf(lead), true)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for i := range 5 {
			go func() { _, _ = c.nodes[lead].Propose(ctx, []byte(fmt.Sprintf("orphan%d", i))) }()
		}
		// The orphans reach the old leader's log (not beyond).
		c.tickUntil("orphans appended", 100, func() bool {
			return c.nodes[lead].st != nil && c.lastIndexOf(lead) >= c.nodes[lead].Status().Commit+5
		})
		orphanLast := c.lastIndexOf(lead)
		var others []uint64
		for id := range c.nodes {
			if id != lead {
				others = append(others, id)
			}
		}
		// The other two elect a leader and commit new entries at the same indexes.
		var lead2 uint64
		c.tickUntil("new leader among the majority", 500, func() bool {
			for _, id := range others {
				if c.nodes[id].Status().IsLeader {
					lead2 = id
					return true
				}
			}
			return false
		})
		for i := range 7 {
			c.propose(lead2, fmt.Sprintf("new%d", i))
		}
		c.nw.setCut(addrOf(lead), false)
		c.waitApplied(c.nodes[lead2].Status().Applied)
		want := []string{"base"}
		for i := range 7 {
			want = append(want, fmt.Sprintf("new%d", i))
		}
		c.checkSame(want)
		// The old leader's log now matches the new leader's, term for term, and
		// no orphan survived.
		checkLogsMatch(t, c, lead, lead2)
		replaced := 0
		for _, e := range c.entriesOf(lead) {
			if bytes.Contains(e.GetData(), []byte("orphan")) {
				t.Fatalf("orphan entry %d (term %d) survived", e.GetIndex(), e.GetTerm())
			}
			if e.GetIndex() <= orphanLast && e.GetIndex() > orphanLast-5 {
				replaced++
			}
		}
		if replaced != 5 {
			t.Fatalf("%d of the 5 orphan indexes hold new entries", replaced)
		}
	})
}

// entriesOf returns every entry a node's storage holds.
func (c *testCluster) entriesOf(id uint64) (ents []*pb.Entry) {
	n := c.nodes[id]
	_ = n.do(context.Background(), func() {
		var err error
		ents, err = n.st.Entries(n.st.first, n.st.lastIndex()+1, 1<<30)
		if err != nil {
			c.t.Errorf("node %d entries: %v", id, err)
		}
	})
	return ents
}

// lastIndexOf reads a node's last log index on its loop.
func (c *testCluster) lastIndexOf(id uint64) uint64 {
	var last uint64
	_ = c.nodes[id].do(context.Background(), func() { last = c.nodes[id].st.lastIndex() })
	return last
}

func checkLogsMatch(t *testing.T, c *testCluster, a, b uint64) {
	t.Helper()
	ea, eb := c.entriesOf(a), c.entriesOf(b)
	if len(ea) == 0 || len(eb) == 0 {
		t.Fatalf("empty logs: %d %d", len(ea), len(eb))
	}
	byIndex := map[uint64]*pb.Entry{}
	for _, e := range eb {
		byIndex[e.GetIndex()] = e
	}
	for _, e := range ea {
		o := byIndex[e.GetIndex()]
		if o == nil {
			continue
		}
		if o.GetTerm() != e.GetTerm() || string(o.GetData()) != string(e.GetData()) {
			t.Fatalf("index %d: node %d has term %d %q, node %d term %d %q", e.GetIndex(),
				a, e.GetTerm(), e.GetData(), b, o.GetTerm(), o.GetData())
		}
	}
}

func TestSnapshotCompactionAndCatchUpBySnapshot(t *testing.T) {
	storageKinds(t, func(t *testing.T, segmentLog bool) {
		c := newTestCluster(t, 3, func(cfg *Config) {
			cfg.SnapshotEvery = 20
			cfg.CatchUpEntries = 5
			cfg.EntryCacheBytes = 512 // most reads come from the log
		})
		c.segment = segmentLog
		c.startVoters()
		lead := c.leader()
		lagger := lead%3 + 1
		c.kill(lagger)
		var want []string
		for i := range 70 {
			want = append(want, fmt.Sprintf("s%d", i))
			c.propose(lead, want[len(want)-1])
		}
		ln := c.nodes[lead]
		var first, snapIdx uint64
		_ = ln.do(context.Background(), func() { first, snapIdx = ln.st.first, ln.st.snapshotIndex() })
		if snapIdx < 60 || first != snapIdx-5+1 {
			t.Fatalf("leader snapshot at %d, first index %d; want >= 60 and first = snapshot-4", snapIdx, first)
		}
		var names []string
		_ = ln.do(context.Background(), func() { names, _ = ln.st.files.List() })
		if len(listSnapFiles(names)) > 2 {
			t.Fatalf("old snapshots kept: %v", names)
		}
		// The lagging node's log ends before the leader's first index: it
		// can only catch up through a snapshot.
		c.start(lagger)
		c.waitApplied(ln.Status().Applied)
		c.checkSame(want)
		if c.sms[lagger].base == 0 {
			t.Fatalf("lagging node caught up without a snapshot")
		}
		// And it restarts from the installed snapshot.
		c.crash(lagger)
		c.start(lagger)
		c.propose(lead, "tail")
		want = append(want, "tail")
		c.waitApplied(ln.Status().Applied)
		c.checkSame(want)

		// Everyone restarts from compacted logs and snapshots.
		for id := range c.voters {
			c.crash(id)
		}
		c.startVoters()
		lead = c.leader()
		c.propose(lead, "end")
		want = append(want, "end")
		c.waitApplied(c.nodes[lead].Status().Applied)
		c.checkSame(want)
	})
}

func TestSingleVoter(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	c.startVoters()
	lead := c.leader()
	if lead != 1 {
		t.Fatalf("leader %d", lead)
	}
	idx := c.propose(1, "solo")
	if idx == 0 || c.nodes[1].Status().Applied < idx {
		t.Fatalf("index %d, status %+v", idx, c.nodes[1].Status())
	}
	c.checkSame([]string{"solo"})
}

func TestCloseFailsWaitingCallsAndIsIdempotent(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.start(1)
	n := c.nodes[1]
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Propose(context.Background(), []byte("x")); !errors.Is(err, ErrStopped) {
		t.Fatalf("Propose after Close: %v", err)
	}
	if err := n.AddLearner(context.Background(), 9, "x"); !errors.Is(err, ErrStopped) {
		t.Fatalf("AddLearner after Close: %v", err)
	}
	n.Tick() // returns at once
	delete(c.nodes, 1)
}

func TestStorageFailureStopsNode(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	c.startVoters()
	c.leader()
	boom := errors.New("disk on fire")
	c.disks[1].log.mu.Lock()
	c.disks[1].log.failAt = boom
	c.disks[1].log.mu.Unlock()
	_, err := c.nodes[1].Propose(context.Background(), []byte("x"))
	if !errors.Is(err, ErrStopped) || !errors.Is(err, boom) {
		t.Fatalf("propose on a failing disk: %v", err)
	}
	<-c.nodes[1].Done()
	if !errors.Is(c.nodes[1].Err(), boom) {
		t.Fatalf("Err() = %v", c.nodes[1].Err())
	}
}

// A snapshot whose send fails is reported to raft (ReportSnapshot failure)
// and sent again; the lagging node still catches up.
func TestSnapshotSendFailureIsRetried(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SnapshotEvery = 10
		cfg.CatchUpEntries = 2
	})
	c.startVoters()
	lead := c.leader()
	lagger := lead%3 + 1
	c.kill(lagger)
	var want []string
	for i := range 30 {
		want = append(want, fmt.Sprintf("f%d", i))
		c.propose(lead, want[len(want)-1])
	}
	var failed atomic.Int32
	c.nw.mu.Lock()
	c.nw.fail = func(from, to uint64, m *pb.Message) bool {
		return m.GetType() == pb.MsgSnap && failed.Add(1) <= 2
	}
	c.nw.mu.Unlock()
	c.start(lagger)
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.checkSame(want)
	if failed.Load() < 3 {
		t.Fatalf("%d snapshot sends seen, want the 2 failures and a success", failed.Load())
	}
}
