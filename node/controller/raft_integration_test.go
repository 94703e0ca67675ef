package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/raftnode"
	"paymentlog/wire"
)

// raftCluster runs controllers on real raft nodes over QUIC on loopback, each
// node with a simulated broker that registers and heartbeats to whichever
// controller is active (what the node glue does over the network).
type raftCluster struct {
	t      *testing.T
	voters map[uint64]string
	dirs   map[uint64]string
	addrs  map[uint64]string
	log    *slog.Logger

	// Timing (defaults: fast test settings).
	tick      time.Duration
	heartbeat time.Duration
	session   time.Duration

	mu    sync.Mutex
	nodes map[uint64]*raftTestNode
}

type raftTestNode struct {
	id     uint64
	ep     *quic.Endpoint
	serve  chan error
	store  *metadata.Store
	raft   *raftnode.Node
	ctrl   *Controller // nil on broker-only nodes
	cancel context.CancelFunc
	wg     sync.WaitGroup
	inc    int64
}

const (
	itHeartbeat = 50 * time.Millisecond
	itSession   = 500 * time.Millisecond
)

func newRaftCluster(t *testing.T, voters int) *raftCluster {
	c := &raftCluster{t: t, voters: map[uint64]string{}, dirs: map[uint64]string{}, addrs: map[uint64]string{},
		nodes: map[uint64]*raftTestNode{}, tick: 10 * time.Millisecond, heartbeat: itHeartbeat, session: itSession}
	base := t.TempDir() // before the Cleanup below, so it is removed after the nodes stop
	for id := uint64(1); id <= uint64(voters)+1; id++ {
		c.dirs[id] = filepath.Join(base, fmt.Sprint(id))
	}
	c.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("CONTROLLER_TEST_LOG") != "" {
		c.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	t.Cleanup(func() {
		for _, id := range c.ids() {
			c.kill(id)
		}
	})
	for id := uint64(1); id <= uint64(voters); id++ {
		ep := c.listen(id, "127.0.0.1:0")
		c.voters[id] = ep.Addr()
		c.addrs[id] = ep.Addr()
		ep.Close()
	}
	return c
}

func (c *raftCluster) listen(id uint64, addr string) *quic.Endpoint {
	c.t.Helper()
	ep, err := quic.New(context.Background(), quic.Config{Addr: addr, Logger: c.log})
	if err != nil {
		c.t.Fatalf("endpoint %d: %v", id, err)
	}
	return ep
}

func (c *raftCluster) ids() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []uint64
	for id := range c.nodes {
		out = append(out, id)
	}
	return out
}

func (c *raftCluster) node(id uint64) *raftTestNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// start starts node id (a voter if listed in voters, else broker-only) on
// its address and data dir, with a new broker incarnation.
func (c *raftCluster) start(id uint64) {
	c.t.Helper()
	addr := c.addrs[id]
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ep := c.listen(id, addr)
	c.addrs[id] = ep.Addr()
	n := &raftTestNode{id: id, ep: ep, serve: make(chan error, 1), store: metadata.NewStore(metadata.WithLogger(c.log)),
		inc: time.Now().UnixNano()}
	go func() { n.serve <- ep.Serve(context.Background()) }()
	rn, err := raftnode.Start(context.Background(), raftnode.Config{
		ID: id, Voters: c.voters, Addr: ep.Addr(), DataDir: c.dirs[id], Endpoint: ep,
		TickInterval: c.tick, ElectionTicks: 10, NoSync: true, SegmentBytes: 1 << 20,
		SM: n.store, Logger: c.log.With("raft", id),
	})
	if err != nil {
		c.t.Fatalf("raft %d: %v", id, err)
	}
	n.raft = rn
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	_, eligible := c.voters[id]
	if eligible {
		n.ctrl = New(Config{NodeID: int32(id), Raft: rn, Store: n.store, HeartbeatInterval: c.heartbeat,
			SessionTimeout: c.session, Logger: c.log.With("controller", id)})
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			if err := n.ctrl.Run(ctx); err != nil {
				c.t.Errorf("controller %d: %v", id, err)
			}
		}()
	}
	n.wg.Add(1)
	go func() { defer n.wg.Done(); c.brokerLoop(ctx, n, eligible) }()
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
}

// active returns the active controller, or nil.
func (c *raftCluster) active() *Controller {
	for _, id := range c.ids() {
		if n := c.node(id); n != nil && n.ctrl != nil && n.ctrl.Active() {
			return n.ctrl
		}
	}
	return nil
}

// brokerLoop registers and heartbeats like the node glue does.
func (c *raftCluster) brokerLoop(ctx context.Context, n *raftTestNode, eligible bool) {
	registered := false
	t := time.NewTicker(c.heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ctrl := c.active()
		if ctrl == nil {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, c.session/2)
		if !registered {
			r := ctrl.Register(rctx, wire.BrokerRegisterRequest{BrokerID: int32(n.id), Addr: n.ep.Addr(),
				Incarnation: n.inc, ControllerEligible: eligible})
			registered = r.Err == wire.None
		}
		if registered {
			hb := ctrl.Heartbeat(rctx, wire.BrokerHeartbeatRequest{BrokerID: int32(n.id), Incarnation: n.inc,
				MetadataOffset: int64(n.store.Image().Offset())})
			if hb.Err == wire.StaleBrokerEpoch {
				registered = false
			}
		}
		cancel()
	}
}

// kill stops node id without goodbye: its broker goes silent, its raft node
// and endpoint close.
func (c *raftCluster) kill(id uint64) {
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n == nil {
		return
	}
	n.cancel()
	n.wg.Wait()
	if err := n.raft.Close(); err != nil {
		c.t.Errorf("close raft %d: %v", id, err)
	}
	_ = n.ep.Close()
	if err := <-n.serve; err != nil && !errors.Is(err, quic.ErrServerClosed) {
		c.t.Errorf("serve %d: %v", id, err)
	}
}

func (c *raftCluster) waitFor(what string, cond func() bool) time.Time {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var s string
			for _, id := range c.ids() {
				n := c.node(id)
				s += fmt.Sprintf("\nnode %d raft %+v\n%s", id, n.raft.Status(), n.store.Image())
			}
			c.t.Fatalf("%s: not reached in 30s:%s", what, s)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return time.Now()
}

// converged reports whether every running node's image has the same hash
// and each broker in want is unfenced (or fenced, per want).
func (c *raftCluster) converged(want map[int32]bool) bool {
	var hash [32]byte
	first := true
	for _, id := range c.ids() {
		img := c.node(id).store.Image()
		h := img.Hash()
		if !first && h != hash {
			return false
		}
		hash, first = h, false
		for b, alive := range want {
			st, ok := img.Broker(b)
			if !ok || st.Fenced == alive {
				return false
			}
		}
	}
	return true
}

func (c *raftCluster) createTopic(name string, partitions, rf int32) wire.CreateTopicResponse {
	c.t.Helper()
	var r wire.CreateTopicResponse
	c.waitFor("topic "+name+" created", func() bool {
		ctrl := c.active()
		if ctrl == nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r = ctrl.CreateTopic(ctx, wire.CreateTopicRequest{Name: name, Partitions: partitions, ReplicationFactor: rf})
		return r.Err != wire.NotController
	})
	return r
}

// TestControllerOnRaft: three controllers on real raft over QUIC elect one;
// brokers register and are unfenced; a broker-only node joins as a learner;
// topics appear identically everywhere; killing the active controller's node
// hands over to another that fences the dead broker after its grace and
// moves its leaderships; the node restarts with a new incarnation from its
// own disk and is unfenced once caught up.
func TestControllerOnRaft(t *testing.T) {
	if testing.Short() {
		t.Skip("real network and disk")
	}
	c := newRaftCluster(t, 3)
	for id := uint64(1); id <= 3; id++ {
		c.start(id)
	}
	c.waitFor("brokers 1-3 unfenced everywhere", func() bool { return c.converged(map[int32]bool{1: true, 2: true, 3: true}) })

	// A broker-only node is added as a raft learner and receives the log.
	c.start(4)
	c.waitFor("broker 4 unfenced everywhere", func() bool {
		return c.converged(map[int32]bool{1: true, 2: true, 3: true, 4: true})
	})
	if r := c.createTopic("pay", 8, 3); r.Err != wire.None {
		t.Fatalf("create: %+v", r)
	}
	c.waitFor("topic everywhere", func() bool {
		_, ok := c.node(4).store.Image().Topic("pay")
		return ok && c.converged(nil)
	})
	img := c.node(4).store.Image()
	on4 := len(img.PartitionsOf(4))
	if on4 == 0 {
		t.Fatalf("broker-only node got no replicas:\n%s", img)
	}

	// Kill the active controller's node, no goodbye.
	var dead uint64
	c.waitFor("an active controller", func() bool {
		for _, id := range c.ids() {
			if n := c.node(id); n.ctrl != nil && n.ctrl.Active() {
				dead = id
				return true
			}
		}
		return false
	})
	ledBefore := c.node(dead).store.Image().LeaderCount(int32(dead))
	killed := time.Now()
	c.kill(dead)
	activeAt := c.waitFor("a new active controller", func() bool { return c.active() != nil })
	fencedAt := c.waitFor("dead broker fenced, leaderships moved", func() bool {
		for _, id := range c.ids() {
			img := c.node(id).store.Image()
			b, _ := img.Broker(int32(dead))
			if !b.Fenced || img.LeaderCount(int32(dead)) != 0 {
				return false
			}
		}
		return c.converged(nil)
	})
	t.Logf("controller failover %v; dead broker (led %d partitions) fenced %v after the new controller took over (session %v)",
		activeAt.Sub(killed), ledBefore, fencedAt.Sub(activeAt), itSession)
	img = c.node(4).store.Image()
	img.EachPartition(func(p metadata.PartitionState) bool {
		// With RF 3 and one broker dead, no partition may be offline.
		if p.InISR(int32(dead)) && len(p.ISR) > 1 || p.Leader == metadata.NoLeader {
			t.Errorf("after fencing %d: %s", dead, p)
		}
		return true
	})

	// It restarts from its own disk with a new incarnation and is unfenced
	// once it has caught up.
	c.start(dead)
	c.waitFor("restarted broker unfenced everywhere", func() bool {
		return c.converged(map[int32]bool{1: true, 2: true, 3: true, 4: true})
	})
	if r := c.createTopic("after", 4, 4); r.Err != wire.None {
		t.Fatalf("create after restart: %+v", r)
	}
	c.waitFor("second topic everywhere", func() bool {
		_, ok := c.node(dead).store.Image().Topic("after")
		return ok && c.converged(nil)
	})
}
