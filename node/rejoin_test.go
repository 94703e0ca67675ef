package node_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// syncBuffer is a log sink tests can read while nodes write to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// logCapture keeps every node's log for the test to read.
type logCapture struct {
	mu   sync.Mutex
	logs map[int32]*syncBuffer
}

// configure sends the log of the node started with cfg to a new buffer.
func (lc *logCapture) configure(cfg *node.Config) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.logs == nil {
		lc.logs = map[int32]*syncBuffer{}
	}
	w := &syncBuffer{}
	lc.logs[cfg.ID] = w
	cfg.Logger = slog.New(slog.NewTextHandler(w, nil)).With("node", cfg.ID)
}

// of returns what node id's latest start has logged.
func (lc *logCapture) of(id int32) string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.logs[id].String()
}

// A controller whose metadata log was wiped restarts while the active
// controller is down. With only one other controller answering it must not
// vote (that controller may lack entries only the dead one and the wiped
// one had); once the dead one is back it catches up, votes again, and the
// metadata survives a further controller loss.
func TestWipedControllerVotesOnlyAfterCatchingUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var logs logCapture
	tc := mustStartClusterWith(t, 3, logs.configure)
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 3, ReplicationFactor: 3, MinISR: 2})
	waitFor(t, "converged images with the topic", 15*time.Second, func() bool {
		_, ok := tc.image().Topic("payments")
		return ok && tc.converged()
	})
	a := tc.activeController()
	var b, other int32
	for id := int32(1); id <= 3; id++ {
		if id != a && b == 0 {
			b = id
		} else if id != a {
			other = id
		}
	}

	tc.kill(b)
	if err := os.RemoveAll(filepath.Join(tc.dir, fmt.Sprintf("node%d", b), node.MetadataDirName)); err != nil {
		t.Fatal(err)
	}
	tc.kill(a)
	tc.start(b)
	waitGuardedUntilBack(t, tc, logs.of, b, other, a)
	// Its vote counts again: without a, b and the other elect a controller.
	tc.kill(a)
	waitFor(t, "a controller elected by the two others", 15*time.Second, func() bool { return tc.activeController() != 0 })
	if _, ok := tc.image().Topic("payments"); !ok {
		t.Fatal("topic lost")
	}
}

// waitGuardedUntilBack checks that controller wiped, restarted with an
// empty metadata log while controller dead is down, hears from other alone
// and stays vote-guarded, with no controller elected; then it restarts dead
// and waits until wiped has caught up, the topic "payments" included.
func waitGuardedUntilBack(t *testing.T, tc *testCluster, logOf func(int32) string, wiped, other, dead int32) {
	t.Helper()
	nw := tc.node(wiped)
	waitFor(t, "the wiped controller to hear from the one other controller up", 15*time.Second, func() bool {
		l := logOf(wiped)
		return strings.Contains(l, fmt.Sprintf("answered=[%d] needed=2", other)) || strings.Contains(l, "vouches for it")
	})
	if !nw.Raft().Status().VoteGuarded {
		t.Fatalf("node %d votes with an empty log and one other controller answering", wiped)
	}
	for _, id := range []int32{wiped, other} {
		if st := tc.node(id).Raft().Status(); st.IsLeader {
			t.Fatalf("node %d leads with the wiped node's vote: %+v", id, st)
		}
	}
	tc.start(dead)
	waitFor(t, "the wiped controller caught up and voting", 30*time.Second, func() bool {
		return !nw.Raft().Status().VoteGuarded
	})
	if _, ok := nw.Store().Image().Topic("payments"); !ok {
		t.Fatalf("node %d caught up without the topic", wiped)
	}
}

// A controller whose whole data directory was wiped (disk replaced:
// metadata log, partitions, incarnation) restarts with the others up: it
// catches up, votes again, gets its replicas back into the ISR by fetching,
// and once the node that was both active controller and partition leader
// dies, it and the third node carry on with every acknowledged record at
// its offset.
func TestControllerWithWipedDataDirRejoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := MustStartCluster(t, 3)
	w := startPayments(ctx, t, tc)
	// Read the ISR from the active controller's image: a restarted node's
	// image replays the log's history (an ISR of three from before the
	// wipe) while it catches up.
	fullISR := func() bool {
		a := tc.activeController()
		if a == 0 || !tc.converged() {
			return false
		}
		p, ok := tc.node(a).Store().Image().Partition("payments", 0)
		return ok && len(p.ISR) == 3 && tc.converged()
	}
	waitFor(t, "full ISR and converged images", 15*time.Second, fullISR)
	// The scenario is a formed cluster losing a disk: every controller has
	// lifted its first-start guard (a slow one may still be guarded, and two
	// guarded controllers of three wait for each other).
	waitFor(t, "no controller vote-guarded", 15*time.Second, func() bool {
		for _, n := range tc.running() {
			if n.Raft().Status().VoteGuarded {
				return false
			}
		}
		return true
	})
	a := tc.activeController()
	b := a%3 + 1
	// The partition's state at each step, for a failure's output (leader,
	// epochs, ISR and ELR as the active controller has them).
	logState := func(step string) {
		if c := tc.activeController(); c != 0 {
			p, _ := tc.node(c).Store().Image().Partition("payments", 0)
			t.Logf("%s: controller %d: %v", step, c, p)
		} else {
			t.Logf("%s: no controller", step)
		}
	}
	logState(fmt.Sprintf("before node %d is wiped", b))

	tc.kill(b)
	if err := os.RemoveAll(filepath.Join(tc.dir, fmt.Sprintf("node%d", b))); err != nil {
		t.Fatal(err)
	}
	nb := tc.start(b)
	waitFor(t, "the wiped controller caught up and voting", 30*time.Second, func() bool {
		return !nb.Raft().Status().VoteGuarded
	})
	waitFor(t, "the wiped node back in the ISR", 30*time.Second, fullISR)
	logState("wiped node back in the ISR")
	w.produce(ctx, 50, 100)
	w.flush(ctx)
	logState("records 50..99 flushed")

	// Kill the node that is the active controller, and the partition's
	// leader if that is another node (never b): b's vote is needed for the
	// next controller.
	p, _ := tc.image().Partition("payments", 0)
	tc.kill(a)
	if p.Leader != b && p.Leader != a {
		waitFor(t, "a controller elected with the wiped node's vote", 15*time.Second, func() bool { return tc.activeController() != 0 })
		tc.kill(p.Leader)
		tc.start(a)
	}
	waitFor(t, "a controller and a partition leader", 30*time.Second, func() bool {
		p, ok := tc.image().Partition("payments", 0)
		return ok && tc.activeController() != 0 && p.Leader > 0 && tc.node(p.Leader) != nil
	})
	logState("after the controller's death")
	byOffset := w.acknowledged(ctx)
	readBackPayments(ctx, t, tc.client(ctx), byOffset)
}
