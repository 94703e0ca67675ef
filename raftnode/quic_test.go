package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"paymentlog/quic"
)

// quicCluster runs nodes over real QUIC endpoints on loopback with the
// internal ticker (the network is real, so time is too); tests wait for
// conditions with deadlines.
type quicCluster struct {
	t      *testing.T
	voters map[uint64]string
	addrs  map[uint64]string // every node's address, learners too
	eps    map[uint64]*quic.Endpoint
	serve  map[uint64]chan error
	nodes  map[uint64]*Node
	sms    map[uint64]*testSM
	disks  map[uint64]*memDisk
	dirs   map[uint64]string
	onDisk bool
	lg     *slog.Logger // warnings and errors, printed if the test fails
	tick   time.Duration
}

func newQuicCluster(t *testing.T, voters int, onDisk bool) *quicCluster {
	c := &quicCluster{
		t: t, voters: map[uint64]string{}, addrs: map[uint64]string{}, eps: map[uint64]*quic.Endpoint{}, serve: map[uint64]chan error{},
		nodes: map[uint64]*Node{}, sms: map[uint64]*testSM{}, disks: map[uint64]*memDisk{},
		dirs: map[uint64]string{}, onDisk: onDisk,
	}
	c.lg = failureLogger(t)
	c.tick = 10 * time.Millisecond
	root := t.TempDir() // before the Cleanup below, so removed after it
	for id := uint64(1); id <= 8; id++ {
		c.dirs[id] = fmt.Sprintf("%s/node%d/__cluster_metadata-0", root, id)
	}
	t.Cleanup(func() {
		for id := range c.nodes {
			c.kill(id)
		}
	})
	for id := uint64(1); id <= uint64(voters); id++ {
		c.listen(id, "127.0.0.1:0")
		c.voters[id] = c.eps[id].Addr()
	}
	return c
}

func (c *quicCluster) listen(id uint64, addr string) {
	c.t.Helper()
	ep, err := quic.New(context.Background(), quic.Config{Addr: addr, Logger: c.lg})
	if err != nil {
		c.t.Fatalf("endpoint %d: %v", id, err)
	}
	done := make(chan error, 1)
	go func() { done <- ep.Serve(context.Background()) }()
	c.eps[id], c.serve[id] = ep, done
	c.addrs[id] = ep.Addr()
}

func (c *quicCluster) start(id uint64) {
	c.t.Helper()
	if c.eps[id] == nil {
		c.listen(id, c.addrs[id])
	}
	c.sms[id] = &testSM{}
	cfg := Config{
		ID: id, Voters: c.voters, Addr: c.eps[id].Addr(), Endpoint: c.eps[id],
		TickInterval: c.tick, ElectionTicks: 10, NoSync: true, ForwardProposals: true,
		SM: c.sms[id], Logger: c.lg.With("test_node", id),
	}
	if c.onDisk {
		cfg.DataDir, cfg.SegmentBytes = c.dirs[id], 1<<20
	} else {
		if c.disks[id] == nil {
			c.disks[id] = &memDisk{log: newMemLog(), files: newMemFiles()}
		}
		cfg.log, cfg.files = c.disks[id].log, c.disks[id].files
	}
	n, err := Start(context.Background(), cfg)
	if err != nil {
		c.t.Fatalf("start %d: %v", id, err)
	}
	c.nodes[id] = n
}

// kill closes the node and its endpoint without any goodbye to raft.
func (c *quicCluster) kill(id uint64) {
	c.t.Helper()
	if n := c.nodes[id]; n != nil {
		if err := n.Close(); err != nil {
			c.t.Errorf("close %d: %v", id, err)
		}
		delete(c.nodes, id)
	}
	if ep := c.eps[id]; ep != nil {
		_ = ep.Close()
		if err := <-c.serve[id]; !errors.Is(err, quic.ErrServerClosed) {
			c.t.Errorf("serve %d: %v", id, err)
		}
		delete(c.eps, id)
	}
}

func (c *quicCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var s string
			for _, id := range sortedIDs(c.nodes) {
				s += fmt.Sprintf("%+v ", c.nodes[id].Status())
			}
			c.t.Fatalf("%s: not reached in 20s: %s", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *quicCluster) leader() uint64 {
	c.t.Helper()
	var lead uint64
	c.waitFor("agreed leader", func() bool {
		lead = 0
		for _, n := range c.nodes {
			st := n.Status()
			if st.Leader == 0 || (lead != 0 && st.Leader != lead) {
				return false
			}
			lead = st.Leader
		}
		return c.nodes[lead] != nil && c.nodes[lead].Status().IsLeader
	})
	return lead
}

// propose retries through leader changes until the value is applied. A
// proposal reported dropped when the leader changed may still have been
// committed, so a value can be applied twice; waitSame ignores repeats (the
// state machines of this project apply idempotent records).
func (c *quicCluster) propose(data string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		lead := c.leader()
		_, err := c.nodes[lead].Propose(ctx, []byte(data))
		if err == nil {
			return
		}
		if !errors.Is(err, ErrProposalDropped) {
			c.t.Fatalf("propose %q: %v", data, err)
		}
	}
}

func (c *quicCluster) waitSame(want []string) {
	c.t.Helper()
	c.waitFor(fmt.Sprintf("%d values everywhere", len(want)), func() bool {
		var first []string
		for i, id := range sortedIDs(c.nodes) {
			vals := c.sms[id].values()
			if !slices.Equal(firstOccurrences(vals), want) || (i > 0 && !slices.Equal(vals, first)) {
				return false
			}
			first = vals
		}
		return true
	})
}

func TestQUICThreeNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	requireSegment(t)
	c := newQuicCluster(t, 3, true)
	for id := range c.voters {
		c.start(id)
	}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("q%d", i))
		c.propose(want[len(want)-1])
	}
	c.waitSame(want)

	// Kill the leader (node and endpoint, no goodbye): a new one takes over
	// with everything committed.
	lead := c.leader()
	c.kill(lead)
	lead2 := c.leader()
	if lead2 == lead {
		t.Fatalf("dead leader %d still leads", lead)
	}
	for i := range 10 {
		want = append(want, fmt.Sprintf("r%d", i))
		c.propose(want[len(want)-1])
	}
	c.waitSame(want)

	// It comes back on its address and catches up.
	c.start(lead)
	c.waitSame(want)

	// A broker-only node joins as a learner over QUIC.
	lead = c.leader()
	c.listen(4, "127.0.0.1:0")
	c.start(4)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.nodes[lead].AddLearner(ctx, 4, c.eps[4].Addr()); err != nil {
		t.Fatalf("AddLearner: %v", err)
	}
	want = append(want, "learned")
	c.propose("learned")
	c.waitSame(want)

	// Everyone stops and restarts from disk.
	for id := range c.nodes {
		c.kill(id)
	}
	for id := uint64(1); id <= 4; id++ {
		c.start(id)
	}
	c.waitSame(want)
	c.waitFor("learner knows it is one", func() bool {
		return slices.Equal(c.nodes[4].Status().Learners, []uint64{4})
	})
	want = append(want, "restarted")
	c.propose("restarted")
	c.waitSame(want)
}

// A frame addressed to another node, or garbage, closes that stream only.
func TestQUICRejectsForeignFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("real network")
	}
	c := newQuicCluster(t, 1, false)
	c.start(1)
	c.leader()
	ep, err := quic.New(context.Background(), quic.Config{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer ep.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, f := range []*raftFrame{{From: 7, To: 99}, {From: 7, To: 1, Msgs: [][]byte{{0xff, 0x01}}}} {
		s, err := ep.OpenSession(ctx, c.voters[1], FrameType, f)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		if _, err := s.Recv(ctx); err == nil {
			t.Fatalf("stream with %+v not closed", f)
		}
		_ = s.Close()
	}
	c.propose("still fine")
	c.waitSame([]string{"still fine"})
}

func firstOccurrences(vals []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range vals {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// TestQUICFailoverTimes measures, with the default 50 ms tick and 10
// election ticks, the time from killing the raft leader (no goodbye) to the
// first proposal committed and applied by its successor. Set
// RAFTNODE_FAILOVER_TRIALS (e.g. 20) to run it.
func TestQUICFailoverTimes(t *testing.T) {
	trials, _ := strconv.Atoi(os.Getenv("RAFTNODE_FAILOVER_TRIALS"))
	if trials <= 0 {
		t.Skip("set RAFTNODE_FAILOVER_TRIALS to measure failover")
	}
	var times []time.Duration
	for trial := range trials {
		c := newQuicCluster(t, 3, false)
		c.tick = DefaultTickInterval
		for id := range c.voters {
			c.start(id)
		}
		c.propose("warm")
		lead := c.leader()
		start := time.Now()
		c.kill(lead)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		for {
			var n *Node
			for id, cand := range c.nodes {
				if id != lead && cand.Status().IsLeader {
					n = cand
				}
			}
			if n == nil {
				time.Sleep(time.Millisecond)
				continue
			}
			if _, err := n.Propose(ctx, []byte(fmt.Sprintf("after-%d", trial))); err == nil {
				break
			}
		}
		cancel()
		times = append(times, time.Since(start))
		for id := range c.nodes {
			c.kill(id)
		}
	}
	slices.Sort(times)
	pct := func(p float64) time.Duration { return times[min(len(times)-1, int(p*float64(len(times))))] }
	t.Logf("raft failover over QUIC, %d trials (tick %v, election %d ticks): p50 %v p99 %v max %v",
		len(times), DefaultTickInterval, DefaultElectionTicks, pct(0.50), pct(0.99), times[len(times)-1])
}
