package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// runController runs c until the test ends; an error from Run fails the
// test.
func runController(t *testing.T, c *Controller) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return ctx
}

// waitUntil waits for cond with a real-time deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRegainedLeadershipKeepsShortGraceForPreviousController: a node that was
// the active controller, lost leadership to node 2, and regains it after node
// 2 died must give node 2's broker only the short PrevControllerGrace. The
// stall check (real ticker only) compared the first check after regaining
// leadership with the last check of the previous tenure, took the time spent
// as a follower for a stall of its own, and re-armed every session for a
// full timeout: the dead controller's partitions waited a whole session
// instead of a few heartbeats.
func TestRegainedLeadershipKeepsShortGraceForPreviousController(t *testing.T) {
	store := metadata.NewStore()
	clock := &fakeClock{now: time.Unix(1000, 0)}
	raft := newFakeRaft(store, 1, 1, 2, 3)
	c := New(Config{NodeID: 1, Raft: raft, Store: store, HeartbeatInterval: 100 * time.Millisecond,
		SessionTimeout: time.Second, CheckInterval: time.Millisecond, Now: clock.Now, // real ticker
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	ctx := runController(t, c)

	raft.setLeader(1, 1)
	waitUntil(t, "node 1 active", c.Active)
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	up := func(id int32) {
		r := c.Register(rctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id),
			Incarnation: 1, ControllerEligible: id <= 3})
		hb := c.Heartbeat(rctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1,
			MetadataOffset: int64(store.Image().Offset())})
		if r.Err != wire.None || hb.Err != wire.None || hb.Fenced {
			t.Fatalf("broker %d: register %v, heartbeat %v fenced=%t", id, r.Err, hb.Err, hb.Fenced)
		}
	}
	// checked waits until the loop has run a whole check after this point:
	// each check asks raft for its status once or twice (leadership, then
	// learners while active), so five more calls contain one whole check.
	checked := func() {
		n := raft.statusCalls()
		waitUntil(t, "a check", func() bool { return raft.statusCalls() >= n+5 })
	}
	beat := func(ids ...int32) {
		for _, id := range ids {
			c.Heartbeat(rctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1,
				MetadataOffset: int64(store.Image().Offset())})
		}
	}
	// Checks run in the first tenure: broker 4 goes silent and is fenced
	// (the clock moves in steps shorter than the stall threshold).
	up(4)
	checked()
	clock.Advance(400 * time.Millisecond)
	up(1)
	up(2)
	up(3)
	checked()
	clock.Advance(400 * time.Millisecond)
	beat(1, 2, 3)
	checked()
	clock.Advance(300 * time.Millisecond)
	waitUntil(t, "broker 4 fenced", func() bool {
		b, _ := store.Image().Broker(4)
		return b.Fenced
	})

	// Node 2 takes over and writes its marker; much later it dies and node 1
	// leads again.
	raft.setLeader(2, 2)
	waitUntil(t, "node 1 inactive", func() bool { return !c.Active() })
	checked() // no check of the first tenure is still running
	marker, err := metadata.EncodeEntry(metadata.ControllerMarker{ControllerID: 2, Term: 2})
	if err != nil {
		t.Fatal(err)
	}
	raft.commitForeign(marker)
	clock.Advance(10 * time.Second)
	raft.setLeader(1, 3)
	waitUntil(t, "node 1 active again", c.Active)

	// Brokers 1 and 3 heartbeat; node 2's broker is silent. Past the short
	// grace but well within a session, it must be fenced.
	clock.Advance(c.cfg.PrevControllerGrace + 50*time.Millisecond)
	beat(1, 3)
	waitUntil(t, "broker 2 fenced", func() bool {
		b, _ := store.Image().Broker(2)
		return b.Fenced
	})
	for _, id := range []int32{1, 3} {
		if b, _ := store.Image().Broker(id); b.Fenced {
			t.Errorf("broker %d fenced", id)
		}
	}
}
