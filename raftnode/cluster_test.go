package raftnode

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	pb "go.etcd.io/raft/v3/raftpb"

	"paymentlog/segment"
)

// testCluster runs nodes in one process on a memNetwork with in-memory (or
// on-disk) storage, driven by manual ticks: tick() advances every live node
// by one tick and waits until the network is quiet, so runs do not depend on
// the machine's speed.
type testCluster struct {
	t      testing.TB
	nw     *memNetwork
	voters map[uint64]string
	nodes  map[uint64]*Node
	sms    map[uint64]*testSM
	disks  map[uint64]*memDisk
	tune   func(*Config)
	// segment stores each node's metadata log with package segment on a
	// segment.MemFS (crash keeps only what was synced) instead of memLog.
	segment bool
	fss     map[uint64]*segment.MemFS

	// durable is the disk each node started with (memLog nodes only), for
	// checkDurableBeforeSend, which runs on the nodes' Ready loops.
	mu      sync.Mutex
	durable map[uint64]*memDisk
}

type memDisk struct {
	log   *memLog
	files *memFiles
}

func testLogger(tb testing.TB) *slog.Logger {
	if os.Getenv("RAFTNODE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// failureLogger keeps warnings and errors and prints them if tb fails.
func failureLogger(tb testing.TB) *slog.Logger {
	if os.Getenv("RAFTNODE_TEST_LOG") != "" {
		return testLogger(tb)
	}
	w := &lockedBuffer{}
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("log:\n%s", w.String())
		}
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func addrOf(id uint64) string { return fmt.Sprintf("node%d", id) }

// storageKinds runs fn with the in-memory log and with the segment log.
func storageKinds(t *testing.T, fn func(t *testing.T, segment bool)) {
	t.Run("memlog", func(t *testing.T) { fn(t, false) })
	t.Run("segment", func(t *testing.T) {
		requireSegment(t)
		fn(t, true)
	})
}

func newTestCluster(t testing.TB, voters int, tune func(*Config)) *testCluster {
	c := &testCluster{
		t: t, nw: newMemNetwork(), voters: map[uint64]string{},
		nodes: map[uint64]*Node{}, sms: map[uint64]*testSM{}, disks: map[uint64]*memDisk{},
		fss: map[uint64]*segment.MemFS{}, tune: tune, durable: map[uint64]*memDisk{},
	}
	for id := uint64(1); id <= uint64(voters); id++ {
		c.voters[id] = addrOf(id)
	}
	t.Cleanup(c.closeAll)
	return c
}

func (c *testCluster) config(id uint64) Config {
	cfg := Config{
		ID:            id,
		Voters:        c.voters,
		Addr:          addrOf(id),
		ManualTick:    true,
		ElectionTicks: 10,
		// The tests propose on any node; production leaves this off.
		ForwardProposals: true,
		SM:               c.sms[id],
		Logger:           testLogger(c.t).With("test_node", id),
		net:              c.nw.endpoint(addrOf(id)),
		hooks:            c.nw.hooks(),
		NoSync:           true,
	}
	if c.segment {
		if c.fss[id] == nil {
			c.fss[id] = segment.NewMemFS()
		}
		cfg.FS, cfg.DataDir = c.fss[id], "/data/__cluster_metadata-0"
		cfg.SegmentBytes = 1 << 20
		cfg.NoSync = false
	} else {
		d := c.disks[id]
		if d == nil {
			d = &memDisk{log: newMemLog(), files: newMemFiles()}
			c.disks[id] = d
		}
		cfg.log, cfg.files = d.log, d.files
	}
	cfg.hooks.queued = func(from uint64, m *pb.Message) { c.checkDurableBeforeSend(from, m.GetTo(), m) }
	c.mu.Lock()
	if c.segment {
		delete(c.durable, id)
	} else {
		c.durable[id] = c.disks[id]
	}
	c.mu.Unlock()
	if c.tune != nil {
		c.tune(&cfg)
	}
	return cfg
}

// start starts node id with fresh state-machine memory (its disk is kept).
func (c *testCluster) start(id uint64) *Node {
	c.t.Helper()
	return c.startSM(id, &testSM{})
}

// startSM starts node id with sm as its state machine.
func (c *testCluster) startSM(id uint64, sm *testSM) *Node {
	c.t.Helper()
	c.sms[id] = sm
	n, err := Start(context.Background(), c.config(id))
	if err != nil {
		c.t.Fatalf("start node %d: %v", id, err)
	}
	c.nodes[id] = n
	return n
}

func (c *testCluster) startVoters() {
	for id := range c.voters {
		c.start(id)
	}
}

// kill stops node id without a leadership transfer (as abrupt as in-process
// can be: nothing more reaches or leaves it).
func (c *testCluster) kill(id uint64) {
	c.t.Helper()
	n := c.nodes[id]
	if n == nil {
		return
	}
	c.nw.unlisten(addrOf(id))
	if err := n.Close(); err != nil {
		c.t.Fatalf("close node %d: %v", id, err)
	}
	delete(c.nodes, id)
	c.nw.waitIdle(c.t)
}

// crash is kill plus losing whatever the node had not synced.
func (c *testCluster) crash(id uint64) {
	c.kill(id)
	if d := c.disks[id]; d != nil {
		c.disks[id] = &memDisk{log: d.log.crash(), files: d.files.clone()}
	}
	if fs := c.fss[id]; fs != nil {
		c.fss[id] = fs.CrashClone()
	}
}

func (c *testCluster) closeAll() {
	for id := range c.nodes {
		c.nw.unlisten(addrOf(id))
		_ = c.nodes[id].Close()
		delete(c.nodes, id)
	}
}

// tick advances every live node by one tick and waits for quiet.
func (c *testCluster) tick() {
	for _, id := range sortedIDs(c.nodes) {
		c.nodes[id].Tick()
	}
	c.nw.waitIdle(c.t)
}

// transferTicking runs node from's TransferLeadership(to), ticking until it
// returns (failing after max ticks), and returns its error.
func (c *testCluster) transferTicking(from, to uint64, max int) error {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- c.nodes[from].TransferLeadership(ctx, to) }()
	var err error
	c.tickUntil("the transfer", max, func() bool {
		select {
		case err = <-errc:
			return true
		default:
			return false
		}
	})
	return err
}

// followersOf returns the two voters of a 3-voter cluster other than lead,
// the lower id first.
func (c *testCluster) followersOf(lead uint64) (a, b uint64) {
	for id := uint64(1); id <= 3; id++ {
		switch {
		case id == lead:
		case a == 0:
			a = id
		default:
			b = id
		}
	}
	return a, b
}

// tickUntil ticks until cond holds, failing after max ticks.
func (c *testCluster) tickUntil(what string, max int, cond func() bool) {
	c.t.Helper()
	c.nw.waitIdle(c.t)
	for i := 0; !cond(); i++ {
		if i == max {
			c.t.Fatalf("%s: not reached after %d ticks; status: %s", what, max, c.describe())
		}
		c.tick()
	}
}

func (c *testCluster) describe() string {
	s := ""
	for _, id := range sortedIDs(c.nodes) {
		st := c.nodes[id].Status()
		s += fmt.Sprintf("[%d lead=%d term=%d commit=%d applied=%d voters=%v learners=%v] ",
			id, st.Leader, st.Term, st.Commit, st.Applied, st.Voters, st.Learners)
	}
	return s
}

// leader waits for a leader that every live node agrees on and returns it.
func (c *testCluster) leader() uint64 {
	c.t.Helper()
	var lead uint64
	c.tickUntil("agreed leader", 500, func() bool {
		lead = 0
		for _, n := range c.nodes {
			st := n.Status()
			if st.Leader == 0 || (lead != 0 && st.Leader != lead) {
				return false
			}
			lead = st.Leader
		}
		ln := c.nodes[lead]
		return ln != nil && ln.Status().IsLeader
	})
	return lead
}

func (c *testCluster) propose(id uint64, data string) uint64 {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	idx, err := c.nodes[id].Propose(ctx, []byte(data))
	if err != nil {
		c.t.Fatalf("propose %q on %d: %v", data, id, err)
	}
	return idx
}

// waitApplied waits until every live node has applied through index.
func (c *testCluster) waitApplied(index uint64) {
	c.t.Helper()
	c.tickUntil(fmt.Sprintf("applied %d everywhere", index), 200, func() bool {
		for _, n := range c.nodes {
			if n.Status().Applied < index {
				return false
			}
		}
		return true
	})
}

// checkSame fails unless every live node's state machine holds want.
func (c *testCluster) checkSame(want []string) {
	c.t.Helper()
	for id, sm := range c.sms {
		if c.nodes[id] == nil {
			continue
		}
		if got := sm.values(); !slices.Equal(got, want) {
			c.t.Fatalf("node %d applied %d values %v, want %d %v", id, len(got), clip(got), len(want), clip(want))
		}
	}
}

func clip(s []string) []string {
	if len(s) > 12 {
		return append(slices.Clone(s[:6]), append([]string{"..."}, s[len(s)-6:]...)...)
	}
	return s
}

// checkDurableBeforeSend fails the test if a node hands a message to the
// transport before what it implies is on its disk (raft's Ready contract): a
// vote request or a granted vote only after the hard state naming it, an
// append acknowledgement only after the entries (or the snapshot) it
// acknowledges, any message of a term only after that term. It runs on
// every cluster test whose nodes use memLog.
func (c *testCluster) checkDurableBeforeSend(from, to uint64, m *pb.Message) {
	c.mu.Lock()
	d := c.durable[from]
	c.mu.Unlock()
	if d == nil {
		return
	}
	hs := &pb.HardState{}
	if b, err := d.files.ReadFile(hardStateFile); err == nil {
		if hs, err = decodeHardState(b); err != nil {
			c.t.Errorf("node %d: hard state: %v", from, err)
			return
		}
	}
	var snapIndex, snapTerm uint64
	if names, _ := d.files.List(); len(listSnapFiles(names)) > 0 {
		sf := listSnapFiles(names)[0]
		snapIndex, snapTerm = sf.index, sf.term
	}
	d.log.mu.Lock()
	last, lastTerm := d.log.start-1+uint64(d.log.durable), uint64(0)
	if d.log.durable > 0 {
		lastTerm = d.log.ents[d.log.durable-1].GetTerm()
	}
	d.log.mu.Unlock()
	last, term := max(last, snapIndex), max(hs.GetTerm(), lastTerm, snapTerm)
	t := m.GetType()
	switch {
	case t == pb.MsgPreVote || t == pb.MsgPreVoteResp: // a future term, nothing persisted
	case m.GetTerm() > term:
		c.t.Errorf("node %d sent %v in term %d; its disk knows term %d", from, t, m.GetTerm(), term)
	case t == pb.MsgVote && !(hs.GetTerm() > m.GetTerm() || hs.GetTerm() == m.GetTerm() && hs.GetVote() == from):
		c.t.Errorf("node %d requested votes in term %d with hard state %v on disk", from, m.GetTerm(), hs)
	case t == pb.MsgVoteResp && !m.GetReject() && !(hs.GetTerm() > m.GetTerm() || hs.GetTerm() == m.GetTerm() && hs.GetVote() == to):
		c.t.Errorf("node %d granted its vote to %d in term %d with hard state %v on disk", from, to, m.GetTerm(), hs)
	case t == pb.MsgAppResp && !m.GetReject() && m.GetIndex() > last:
		c.t.Errorf("node %d acknowledged index %d with only %d on disk", from, m.GetIndex(), last)
	}
}
