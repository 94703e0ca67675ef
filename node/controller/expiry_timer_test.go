package controller

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// With the real clock, a silent broker is fenced when its session runs out,
// by the timer at the earliest session deadline, not at the next periodic
// check: here the checks are an hour apart and the session is 100 ms.
func TestSessionExpiryFencesBetweenChecks(t *testing.T) {
	store := silentBrokerOf(t, Config{SessionTimeout: 100 * time.Millisecond})
	// Broker 4 now goes silent (brokers 1-3 never registered here).
	waitUntil(t, "broker 4 fenced without a periodic check", func() bool {
		b, ok := store.Image().Broker(4)
		return ok && b.Fenced
	})
}

// With the real clock, a silent broker is probed as soon as it has been
// silent for ProbeAfter, by the same timer, not at the next periodic check:
// here the checks are an hour apart and the session 30 s, so only the
// probe, refused, can fence it in time.
func TestSilentBrokerIsProbedBetweenChecks(t *testing.T) {
	ports := newFakePorts()
	ports.set("127.0.0.1:7104", true)
	// From before its heartbeat: the fence comes ProbeAfter after the
	// controller heard it, at the earliest, so at least that long after.
	start := time.Now()
	store := silentBrokerOf(t, Config{SessionTimeout: 30 * time.Second, Probe: ports.probe, ProbeAfter: 50 * time.Millisecond})
	// Broker 4 now goes silent, its port closed.
	waitUntil(t, "broker 4 probed and fenced without a periodic check", func() bool {
		b, ok := store.Image().Broker(4)
		return ok && b.Fenced
	})
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("fenced %v after its heartbeat was sent: before it was silent for ProbeAfter", took)
	}
}

// silentBrokerOf runs node 1 as the active controller with the real clock
// and ticker, its periodic checks an hour apart (the rest of cfg as given),
// registers broker 4 at 127.0.0.1:7104, which heartbeats once and then
// goes silent, and returns the metadata store.
func silentBrokerOf(t *testing.T, cfg Config) *metadata.Store {
	t.Helper()
	store := metadata.NewStore()
	raft := newFakeRaft(store, 1, 1, 2, 3)
	cfg.NodeID, cfg.Raft, cfg.Store = 1, raft, store
	cfg.HeartbeatInterval, cfg.CheckInterval = 20*time.Millisecond, time.Hour
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	c := New(cfg)
	ctx := runController(t, c)
	raft.setLeader(1, 1)
	waitUntil(t, "node 1 active", c.Active)
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	r := c.Register(rctx, wire.BrokerRegisterRequest{BrokerID: 4, Addr: "127.0.0.1:7104", Incarnation: 1})
	hb := c.Heartbeat(rctx, wire.BrokerHeartbeatRequest{BrokerID: 4, Incarnation: 1, MetadataOffset: int64(store.Image().Offset())})
	if r.Err != wire.None || hb.Err != wire.None || hb.Fenced {
		t.Fatalf("register %v, heartbeat %v fenced=%t", r.Err, hb.Err, hb.Fenced)
	}
	return store
}
