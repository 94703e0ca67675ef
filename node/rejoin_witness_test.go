package node_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// lateGuardCluster starts three controllers of which late holds back its
// rejoin guard's questions until release is closed, so that the two others
// form the cluster (a first start: every controller answered, none past term
// 1) and elect the active controller while late is still vote-guarded. It
// waits for that controller, three unfenced brokers and a topic on every
// node, and returns the per-node logs.
func lateGuardCluster(ctx context.Context, t *testing.T, late int32, release <-chan struct{}) (*testCluster, func(int32) string) {
	t.Helper()
	logs := &logCapture{}
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		logs.configure(cfg)
		if cfg.ID == late {
			node.SetRejoinGate(cfg, func(ctx context.Context) {
				select {
				case <-release:
				case <-ctx.Done():
				}
			})
		}
	})
	waitFor(t, "an active controller and three unfenced brokers", 15*time.Second, func() bool {
		a := tc.activeController()
		return a != 0 && len(tc.node(a).Store().Image().UnfencedBrokers()) >= 3
	})
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	waitFor(t, "the topic on every node", 15*time.Second, func() bool {
		for _, n := range tc.running() {
			if _, ok := n.Store().Image().Topic("payments"); !ok {
				return false
			}
		}
		return true
	})
	if !tc.node(late).Raft().Status().VoteGuarded {
		t.Fatalf("node %d lifted its guard without asking", late)
	}
	return tc, logs.of
}

// The first start's window: a controller whose questions come late (slow
// start, loaded machine) finds the others already past term 1 and would have
// to catch up from a leader before voting. If the active controller dies
// first, the remaining unguarded controller cannot be elected without the
// guarded one's vote. The survivor saw the late one's guard nonce at the
// first start and vouches for it, so it votes at once and the two elect a
// controller; also when the late one restarted meanwhile (its marker, and
// so its nonce, kept).
func TestLateGuardedControllerVotesAfterActiveControllerDies(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restarted=%t", restart), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const late = 3
			release := make(chan struct{})
			tc, logOf := lateGuardCluster(ctx, t, late, release)
			if restart {
				tc.kill(late)
				if nl := tc.start(late); !nl.Raft().Status().VoteGuarded {
					t.Fatalf("node %d restarted unguarded", late)
				}
			}
			var old int32
			waitFor(t, "every node following the active controller", 10*time.Second, func() bool {
				old = tc.activeController()
				return old != 0
			})
			tc.kill(old)
			close(release)
			waitFor(t, "a controller elected by the survivor and the late controller", 10*time.Second, func() bool {
				a := tc.activeController()
				return a != 0 && a != old
			})
			if tc.node(late).Raft().Status().VoteGuarded {
				t.Fatalf("node %d still guarded", late)
			}
			if !strings.Contains(logOf(late), "vouches for it") {
				t.Fatalf("node %d lifted its guard another way:\n%s", late, logOf(late))
			}
			a := tc.activeController()
			if _, ok := tc.node(a).Store().Image().Topic("payments"); !ok {
				t.Fatalf("topic lost on the new controller %d", a)
			}
		})
	}
}

// vouchesFor reports whether a node's log says it vouches for id.
func vouchesFor(log string, id int32) bool {
	for _, m := range regexp.MustCompile(`witnessed="?\[([0-9 ]*)\]`).FindAllStringSubmatch(log, -1) {
		if slices.Contains(strings.Fields(m[1]), fmt.Sprint(id)) {
			return true
		}
	}
	return false
}

// A controller wiped after the first start draws a new guard nonce: the
// survivor's first-start witness names its old one, so it waits as before
// for enough caught-up controllers, and votes only once the dead one is
// back.
func TestWipedControllerIsNotVouchedForByItsOldNonce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const late = 3
	release := make(chan struct{})
	tc, logOf := lateGuardCluster(ctx, t, late, release)
	old := tc.activeController()
	other := 3 - old // of 1 and 2
	if !vouchesFor(logOf(other), late) {
		t.Fatalf("node %d does not vouch for node %d; the test needs it to:\n%s", other, late, logOf(other))
	}
	tc.kill(late)
	if err := os.RemoveAll(filepath.Join(tc.dir, fmt.Sprintf("node%d", late), node.MetadataDirName)); err != nil {
		t.Fatal(err)
	}
	tc.kill(old)
	close(release)
	tc.start(late)
	waitGuardedUntilBack(t, tc, logOf, late, other, old)
}
