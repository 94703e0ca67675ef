package raftnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"paymentlog/segment"
)

// A follower whose fsync fails stops (it must not acknowledge what it could
// not persist); the other two carry on, and it comes back after a restart.
func TestFollowerFsyncFailureStopsIt(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, nil)
	c.segment = true
	c.startVoters()
	lead := c.leader()
	c.propose(lead, "before")
	victim := lead%3 + 1
	c.fss[victim].SetFault(func(op segment.FaultOp, path string) error {
		if op == segment.OpSync && strings.HasSuffix(path, ".log") {
			return syscall.EIO
		}
		return nil
	})
	c.propose(lead, "during")
	select {
	case <-c.nodes[victim].Done():
	case <-time.After(10 * time.Second):
		t.Fatal("node with a failing disk still running")
	}
	if err := c.nodes[victim].Err(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("Err() = %v, want EIO", err)
	}
	if st := c.nodes[victim].Status(); st.Applied >= c.nodes[lead].Status().Applied {
		t.Fatalf("failed node applied %d, as far as the leader", st.Applied)
	}
	c.propose(lead, "after")
	// Restarted on a healthy disk (what survived the failure), it catches up.
	c.crash(victim)
	c.fss[victim].SetFault(nil)
	c.start(victim)
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.checkSame([]string{"before", "during", "after"})
}

// A failed hard state write stops the node before it votes or acknowledges.
func TestHardStateWriteFailureStopsNode(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	boom := errors.New("rename failed")
	c.disks[2].files.mu.Lock()
	c.disks[2].files.fail = boom
	c.disks[2].files.mu.Unlock()
	// Node 2 campaigns: it must persist its new term and self-vote first.
	if err := c.nodes[2].Campaign(context.Background()); err != nil && !errors.Is(err, ErrStopped) {
		t.Fatal(err)
	}
	<-c.nodes[2].Done()
	if !errors.Is(c.nodes[2].Err(), boom) {
		t.Fatalf("Err() = %v", c.nodes[2].Err())
	}
	// Nobody saw a vote request from it.
	for _, id := range []uint64{1, 3} {
		if st := c.nodes[id].Status(); st.Term > 1 {
			t.Fatalf("node %d reached term %d", id, st.Term)
		}
	}
	c.disks[2].files.mu.Lock()
	c.disks[2].files.fail = nil
	c.disks[2].files.mu.Unlock()
	c.kill(2)
	lead := c.leader()
	c.propose(lead, "ok")
}

// Proposals from many goroutines at once are each applied exactly once.
func TestConcurrentProposals(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	c.startVoters()
	lead := c.leader()
	const workers, each = 8, 25
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			for i := range each {
				node := c.nodes[uint64(w%3)+1]
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := node.Propose(ctx, []byte(fmt.Sprintf("w%d-%d", w, i)))
				cancel()
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	vals := c.sms[lead].values()
	seen := map[string]bool{}
	for _, v := range vals {
		if seen[v] {
			t.Fatalf("%s applied twice", v)
		}
		seen[v] = true
	}
	if len(seen) != workers*each {
		t.Fatalf("%d values applied, want %d", len(seen), workers*each)
	}
	c.checkSame(vals)
}

// A power cut on every node at once, with the segment log and no clean
// shutdown: every proposal that returned survives (it was synced on a quorum
// before it was committed), restarts recover the logs and re-learn the commit
// index, and the cluster goes on.
func TestPowerCutEverywhereKeepsAcknowledged(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, nil)
	c.segment = true
	c.startVoters()
	lead := c.leader()
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("p%d", i))
		c.propose(lead, want[len(want)-1])
	}
	victims := []uint64{1, 2, 3}
	images := map[uint64]*segment.MemFS{}
	for _, id := range victims {
		images[id] = c.fss[id].CrashClone() // while running: only what was synced
	}
	for _, id := range victims {
		c.kill(id)
		c.fss[id] = images[id]
	}
	for _, id := range victims {
		c.start(id)
	}
	lead = c.leader()
	want = append(want, "after")
	c.propose(lead, "after")
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.checkSame(want)
}
