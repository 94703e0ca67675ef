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

// A controller whose metadata log was wiped restarts while the active
// controller is down. With only one other controller answering it must not
// vote (that controller may lack entries only the dead one and the wiped
// one had); once the dead one is back it catches up, votes again, and the
// metadata survives a further controller loss.
func TestWipedControllerVotesOnlyAfterCatchingUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logs := map[int32]*syncBuffer{}
	var mu sync.Mutex
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		mu.Lock()
		defer mu.Unlock()
		w := &syncBuffer{}
		logs[cfg.ID] = w
		cfg.Logger = slog.New(slog.NewTextHandler(w, nil)).With("node", cfg.ID)
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	if _, err := c.Admin().CreateTopic(ctx, client.TopicSpec{Name: "payments", Partitions: 3, ReplicationFactor: 3, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
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
	nb := tc.start(b)
	waitFor(t, "the wiped controller to hear from the one other controller up", 15*time.Second, func() bool {
		mu.Lock()
		w := logs[b]
		mu.Unlock()
		return strings.Contains(w.String(), fmt.Sprintf("answered=[%d] needed=2", other))
	})
	if !nb.Raft().Status().VoteGuarded {
		t.Fatalf("node %d votes with an empty log and one other controller answering", b)
	}
	for _, id := range []int32{b, other} {
		if st := tc.node(id).Raft().Status(); st.IsLeader {
			t.Fatalf("node %d leads with the wiped node's vote: %+v", id, st)
		}
	}

	tc.start(a)
	waitFor(t, "the wiped controller caught up and voting", 30*time.Second, func() bool {
		return !nb.Raft().Status().VoteGuarded
	})
	if _, ok := nb.Store().Image().Topic("payments"); !ok {
		t.Fatalf("node %d caught up without the topic", b)
	}
	// Its vote counts again: without a, b and the other elect a controller.
	tc.kill(a)
	waitFor(t, "a controller elected by the two others", 15*time.Second, func() bool { return tc.activeController() != 0 })
	if _, ok := tc.image().Topic("payments"); !ok {
		t.Fatal("topic lost")
	}
}
