package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node"
)

// TestHeldAsideNodeDoesNotLeadTheController: a voter in a disk-stall
// hold-down (its stall over, its heartbeats still held back, fenced by the
// controller) that becomes the metadata quorum's leader hands the
// leadership on to a live voter: first when the active controller
// transfers it there, then when the active controller dies and it may win
// the election. The leadership ends on a node not held aside each time.
func TestHeldAsideNodeDoesNotLeadTheController(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var lc logCapture
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) { lc.configure(cfg); withMetrics(cfg) })
	tc.waitAlive(3)
	ctrl := tc.activeController()
	held := 1 + ctrl%3
	tc.node(held).HoldDown()
	waitFor(t, "the node in a hold-down fenced", 30*time.Second, func() bool {
		a := tc.activeController()
		return a != 0 && !tc.node(a).Store().Image().Live(held)
	})

	// Whether the held node led at some point (watched until the test ends).
	var heldLed atomic.Bool
	watch, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for watch.Err() == nil {
			if tc.node(held).Raft().Status().IsLeader {
				heldLed.Store(true)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	notHeld := func() bool { a := tc.activeController(); return a != 0 && a != held }

	// The active controller hands the leadership to the held node, which
	// hands it on.
	tctx, tcancel := context.WithTimeout(ctx, 3*time.Second)
	err := tc.node(ctrl).Raft().TransferLeadership(tctx, uint64(held))
	tcancel()
	waitFor(t, fmt.Sprintf("node %d, held aside, to have led", held), 10*time.Second, heldLed.Load)
	t.Logf("node %d transferred the leadership to node %d, held aside (transfer: %v)", ctrl, held, err)
	waitFor(t, "the leadership on a node not held aside", 15*time.Second, notHeld)
	// The hand-off is logged once its transfer returned, which may be a
	// moment after the others see the new leader.
	waitFor(t, fmt.Sprintf("node %d to log the hand-off", held), 5*time.Second, func() bool {
		return strings.Contains(lc.of(held), `level=WARN msg="aside for its disk: controller leadership handed to another voter"`)
	})
	if v := value(t, scrape(t, tc.node(held).MetricsAddr()), "paymentlog_controller_handoffs_total", "result", "handed"); v < 1 {
		t.Fatalf("node %d logged a hand-off but counts %v", held, v)
	}

	// The active controller dies: whichever of the two left wins the
	// election, the one not held aside ends up leading.
	ctrl = tc.activeController()
	other := 6 - ctrl - held
	tc.kill(ctrl)
	waitFor(t, fmt.Sprintf("node %d the active controller", other), 30*time.Second, func() bool { return tc.activeController() == other })
	if img := tc.node(other).Store().Image(); img.Live(held) {
		t.Fatalf("node %d, meant to be held aside, is live in the image", held)
	}
}

// TestHeldAsideSoleVoterKeepsLeading: the only voter of a one-controller
// cluster, in a hold-down, keeps the controller's leadership (no other
// voter can take it), and says so once.
func TestHeldAsideSoleVoterKeepsLeading(t *testing.T) {
	var lc logCapture
	tc := mustStartClusterWith(t, 1, func(cfg *node.Config) { lc.configure(cfg); withMetrics(cfg) })
	tc.waitAlive(1)
	n := tc.node(1)
	n.HoldDown()
	const kept = `level=WARN msg="aside for its disk, but this node keeps the controller leadership: no other voter is live to take it"`
	waitFor(t, "the node to say it keeps leading", 15*time.Second, func() bool { return strings.Contains(lc.of(1), kept) })
	waitFor(t, "the node fenced in its own image", 15*time.Second, func() bool { return !n.Store().Image().Live(1) })
	if !n.Raft().Status().IsLeader {
		t.Fatal("the sole voter stopped leading")
	}
	if c := strings.Count(lc.of(1), kept); c != 1 {
		t.Fatalf("%d lines saying it keeps leading, want 1:\n%s", c, lc.of(1))
	}
	e := scrape(t, n.MetricsAddr())
	if v := value(t, e, "paymentlog_controller_kept_while_aside"); v != 1 {
		t.Fatalf("paymentlog_controller_kept_while_aside %v, want 1", v)
	}
	if v := value(t, e, "paymentlog_controller_handoffs_total", "result", "handed"); v != 0 {
		t.Fatalf("%v hand-offs counted with no other voter", v)
	}
	if _, body := health(t, tc, 1, "/readyz"); !strings.Contains(body, "yet still the active controller: no other voter is live") {
		t.Fatalf("/readyz does not say the node keeps the controller:\n%s", body)
	}
}
