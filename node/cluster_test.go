package node_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/internal/freeport"
	"paymentlog/node"
	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// testCluster runs nodes in-process, each with its own endpoint on real QUIC
// over 127.0.0.1.
type testCluster struct {
	t         testing.TB
	dir       string
	ctrls     map[int32]string
	addrs     map[int32]string
	configure func(*node.Config) // applied last in start; may be nil
	mu        sync.Mutex
	nodes     map[int32]*node.Node
}

// freeUDPAddr picks a node address (freeport: outside the range port-0
// sockets draw from, so a dial elsewhere cannot take it before the node
// binds it).
func freeUDPAddr(t testing.TB) string {
	t.Helper()
	return freeport.UDPAddr(t)
}

// MustStartCluster starts controllers 1..n (all controller-eligible).
func MustStartCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	return mustStartClusterWith(t, n, nil)
}

// mustStartClusterWith is MustStartCluster with configure applied to every
// node's configuration before it starts.
func mustStartClusterWith(t testing.TB, n int, configure func(*node.Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, dir: t.TempDir(), ctrls: map[int32]string{}, addrs: map[int32]string{},
		configure: configure, nodes: map[int32]*node.Node{}}
	for id := int32(1); id <= int32(n); id++ {
		a := freeUDPAddr(t)
		tc.ctrls[id], tc.addrs[id] = a, a
	}
	for id := int32(1); id <= int32(n); id++ {
		tc.start(id)
	}
	t.Cleanup(tc.killAll)
	return tc
}

func (tc *testCluster) start(id int32) *node.Node {
	tc.t.Helper()
	if _, ok := tc.addrs[id]; !ok {
		tc.addrs[id] = freeUDPAddr(tc.t)
	}
	cfg := node.DefaultConfig()
	cfg.ID = id
	cfg.Addr = tc.addrs[id]
	cfg.DataDir = filepath.Join(tc.dir, fmt.Sprintf("node%d", id))
	cfg.Controllers = tc.ctrls
	cfg.SegmentBytes = 8 << 20
	cfg.NoRaftSync = true
	cfg.Logger = testLogger(tc.t).With("node", id)
	if tc.configure != nil {
		tc.configure(&cfg)
	}
	n, err := node.Start(context.Background(), cfg)
	if err != nil {
		tc.t.Fatalf("start node %d: %v", id, err)
	}
	tc.mu.Lock()
	tc.nodes[id] = n
	tc.mu.Unlock()
	return n
}

func (tc *testCluster) node(id int32) *node.Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	return tc.nodes[id]
}

func (tc *testCluster) running() []*node.Node {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []*node.Node
	for _, n := range tc.nodes {
		out = append(out, n)
	}
	return out
}

// kill stops a node without any goodbye.
func (tc *testCluster) kill(id int32) {
	tc.mu.Lock()
	n := tc.nodes[id]
	delete(tc.nodes, id)
	tc.mu.Unlock()
	if n != nil {
		n.Kill()
	}
}

func (tc *testCluster) killAll() {
	for _, n := range tc.running() {
		tc.kill(n.ID())
	}
}

func (tc *testCluster) bootstrap() []string {
	var out []string
	for _, n := range tc.running() {
		out = append(out, n.Addr())
	}
	return out
}

func (tc *testCluster) client(ctx context.Context) *client.Client {
	tc.t.Helper()
	c, err := client.New(ctx, client.Config{Bootstrap: tc.bootstrap(), Logger: testLogger(tc.t)})
	if err != nil {
		tc.t.Fatal(err)
	}
	tc.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// activeController is the raft leader agreed by every running node, or 0.
func (tc *testCluster) activeController() int32 {
	var leader uint64
	for _, n := range tc.running() {
		st := n.Raft().Status()
		if st.Leader == 0 || (leader != 0 && st.Leader != leader) {
			return 0
		}
		leader = st.Leader
	}
	if tc.node(int32(leader)) == nil {
		return 0
	}
	return int32(leader)
}

// waitAlive waits until the controller's image shows n unfenced brokers.
func (tc *testCluster) waitAlive(n int) {
	tc.t.Helper()
	// (30 s: three nodes starting beside a full -race suite at load 25 took
	// longer than 15 s to register and stay unfenced.)
	waitFor(tc.t, fmt.Sprintf("%d unfenced brokers", n), 30*time.Second, func() bool {
		a := tc.activeController()
		return a != 0 && len(tc.node(a).Store().Image().UnfencedBrokers()) >= n
	})
	// A cluster's first start leaves every controller vote-guarded until it
	// has caught up with the first leader's log or another controller
	// vouches for it (node/rejoin.go); a controller vouches only for what it
	// saw a round before the answers that made the first start, so under
	// load one may still wait for a leader. A test that kills a controller is
	// about what follows, not about that
	// (TestLateGuardedControllerVotesAfterActiveControllerDies is).
	waitFor(tc.t, "no vote-guarded controller", 15*time.Second, func() bool {
		for _, nd := range tc.running() {
			if nd.Raft().Status().VoteGuarded {
				return false
			}
		}
		return true
	})
}

// converged reports whether every running node has the same image.
func (tc *testCluster) converged() bool {
	var h *[32]byte
	for _, n := range tc.running() {
		x := n.Store().Image().Hash()
		if h != nil && *h != x {
			return false
		}
		h = &x
	}
	return true
}

func (tc *testCluster) image() *metadata.Image {
	return tc.running()[0].Store().Image()
}

func TestMetadataAgreesSurvivesControllerKillAndRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	for i, name := range []string{"payments", "refunds"} {
		createTopic(ctx, t, tc, c, client.TopicSpec{Name: name, Partitions: int32(3 + i), ReplicationFactor: 3, MinISR: 2})
	}
	waitFor(t, "identical images", 10*time.Second, tc.converged)
	if got := len(tc.image().TopicNames()); got != 2 {
		t.Fatalf("topics = %d, want 2", got)
	}

	// Kill the active controller without goodbye: a successor takes over
	// with everything committed.
	old := tc.activeController()
	tc.kill(old)
	waitFor(t, "a new controller", 10*time.Second, func() bool { a := tc.activeController(); return a != 0 && a != old })
	c2 := tc.client(ctx)
	if _, err := c2.Admin().CreateTopic(ctx, client.TopicSpec{Name: "chargebacks", Partitions: 2, ReplicationFactor: 2, MinISR: 1}); err != nil {
		t.Fatalf("create after controller kill: %v", err)
	}
	for _, n := range tc.running() {
		img := n.Store().Image()
		for _, name := range []string{"payments", "refunds", "chargebacks"} {
			if _, ok := img.Topic(name); !ok {
				waitFor(t, "topic "+name+" on node", 5*time.Second, func() bool { _, ok := n.Store().Image().Topic(name); return ok })
			}
		}
	}
	tc.start(old)
	waitFor(t, "restarted controller to catch up", 10*time.Second, tc.converged)

	// Stop all three, restart from disk: the full metadata comes back.
	wantTopics := tc.image().TopicNames()
	for _, n := range tc.running() {
		sctx, c := context.WithTimeout(ctx, 5*time.Second)
		n.Shutdown(sctx)
		c()
		tc.mu.Lock()
		delete(tc.nodes, n.ID())
		tc.mu.Unlock()
	}
	for id := int32(1); id <= 3; id++ {
		tc.start(id)
	}
	waitFor(t, "metadata back from disk", 10*time.Second, func() bool {
		for _, n := range tc.running() {
			if len(n.Store().Image().TopicNames()) != len(wantTopics) {
				return false
			}
		}
		return tc.converged()
	})
	// The image moves on after a restart (new registrations), so compare topics, not hashes.
	for _, name := range wantTopics {
		if _, ok := tc.image().Topic(name); !ok {
			t.Fatalf("topic %s missing after restart", name)
		}
	}
}

func TestBrokerOnlyNodeJoinsAndGetsReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	waitFor(t, "a controller", 10*time.Second, func() bool { return tc.activeController() != 0 })
	tc.start(4) // not in --controllers: a broker-only learner
	c := tc.client(ctx)
	waitFor(t, "node 4 alive", 15*time.Second, func() bool {
		st, err := c.Admin().DescribeCluster(ctx)
		if err != nil {
			return false
		}
		for _, n := range st.Nodes {
			if n.ID == 4 && n.State == "alive" && !n.ControllerEligible {
				return true
			}
		}
		return false
	})
	tc.waitAlive(4)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 8, ReplicationFactor: 3, MinISR: 2})
	img := tc.image()
	if got := len(img.PartitionsOf(4)); got == 0 {
		t.Fatalf("broker-only node 4 got no replicas of an 8-partition RF3 topic")
	}
	// Node 4 is the preferred (first) replica of some partitions. It leads
	// them at once, or, if a stall on a loaded machine had it fenced for a
	// moment at creation, once the preferred replica gets leadership back.
	waitFor(t, "broker-only node 4 leads a partition of 8", 15*time.Second, func() bool {
		return tc.image().LeaderCount(4) > 0
	})
	// The learner receives the metadata log too.
	waitFor(t, "node 4 to apply the topic", 10*time.Second, func() bool {
		_, ok := tc.node(4).Store().Image().Topic("payments")
		return ok
	})
}

func TestSilentBrokerIsFencedAndLosesLeaderships(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 6, ReplicationFactor: 3, MinISR: 2})
	// Kill a broker that is not the controller, so only fencing is measured.
	ctrl := tc.activeController()
	victim := int32(1)
	if victim == ctrl {
		victim = 2
	}
	// The victim is the preferred leader of some partitions: it leads them,
	// or will again once a stall on a loaded machine (a brief fence) is over.
	var led int
	waitFor(t, fmt.Sprintf("victim %d leads a partition", victim), 15*time.Second, func() bool {
		led = tc.image().LeaderCount(victim)
		return led > 0
	})
	killed := time.Now()
	tc.kill(victim)
	// Session timeout plus a margin: one heartbeat-check tick and a raft commit.
	waitFor(t, "fence and leadership moves", node.DefaultSessionTimeout+3*time.Second, func() bool {
		img := tc.node(ctrl).Store().Image()
		b, ok := img.Broker(victim)
		return ok && b.Fenced && img.LeaderCount(victim) == 0
	})
	t.Logf("fenced and %d leaderships moved %v after kill", led, time.Since(killed).Round(time.Millisecond))
	img := tc.node(ctrl).Store().Image()
	img.EachPartition(func(p metadata.PartitionState) bool {
		if p.InISR(victim) {
			t.Errorf("%s/%d: fenced broker %d still in ISR %v", p.Topic, p.Partition, victim, p.ISR)
		}
		if p.Leader == metadata.NoLeader {
			t.Errorf("%s/%d offline with ISR %v", p.Topic, p.Partition, p.ISR)
		}
		return true
	})
}

func TestProduceConsumeAcrossLeaderKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	const total = 3000
	w := newPaymentWriter(t, c, total)
	w.produce(ctx, 0, total/2)
	w.flush(ctx)
	tc.kill(waitLeader(t, tc, "payments", 0))
	w.produce(ctx, total/2, total)
	readBackPayments(ctx, t, tc.client(ctx), w.acknowledged(ctx))
}

// waitLeader returns the partition's leader once the image names one: the
// image read may be a moment behind, or the partition between leaders (a
// stall on a loaded machine can fence a node for a moment).
func waitLeader(t *testing.T, tc *testCluster, topic string, p int32) int32 {
	t.Helper()
	var leader int32
	waitFor(t, fmt.Sprintf("%s-%d has a leader", topic, p), 15*time.Second, func() bool {
		part, ok := tc.image().Partition(topic, p)
		leader = part.Leader
		return ok && leader > 0
	})
	return leader
}

// createTopic creates a topic for a test that is not about fencing. On a
// loaded machine a stall longer than the 250 ms session can fence a broker
// for a moment right after waitAlive saw it alive, and the controller then
// refuses the topic (InvalidReplicationFactor: "exceeds the N available
// brokers") as it should; the test waits for the brokers again and retries
// that refusal only. A TopicAlreadyExists that the client says an earlier
// attempt of the call may have caused (the controller lost its role after
// proposing the topic, which the next one committed) is taken as created.
func createTopic(ctx context.Context, t *testing.T, tc *testCluster, c *client.Client, spec client.TopicSpec) {
	t.Helper()
	for {
		_, err := c.Admin().CreateTopic(ctx, spec)
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.TopicAlreadyExists && strings.Contains(err.Error(), "may have created it") {
			// An earlier attempt of the call was answered NotController or
			// Timeout, or lost, and committed: in the test's own cluster
			// nobody else creates the topic.
			t.Logf("create %s: %v; taking it as created", spec.Name, err)
			waitFor(t, "topic "+spec.Name+" on every node with its partitions led", 15*time.Second, func() bool {
				if !tc.converged() {
					return false
				}
				img := tc.image()
				for i := range spec.Partitions {
					if p, ok := img.Partition(spec.Name, i); !ok || p.Leader < 0 {
						return false
					}
				}
				return true
			})
			return
		}
		if err == nil || !errors.As(err, &we) || we.Code != wire.InvalidReplicationFactor || ctx.Err() != nil {
			if err != nil {
				t.Fatalf("create %s: %v", spec.Name, err)
			}
			return
		}
		t.Logf("create %s: %v; waiting for the brokers and retrying", spec.Name, err)
		tc.waitAlive(int(spec.ReplicationFactor))
	}
}
