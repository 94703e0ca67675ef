package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestUnfencedDeafBrokerNotRefenced: a broker fenced because it confirmed
// no answer for 1.5 session timeouts (it could not receive) is unfenced by a
// heartbeat once its link heals; whether or not that heartbeat's answer
// gets back to the broker, the answers it missed while deaf must not fence
// it again. Here the unfencing heartbeat's caller gives up while the
// unfence is being committed (a heartbeat times out on the broker): the
// unfence commits, and the next check must leave the broker alone. (In a
// chaos run the check ran between the commit and the heartbeat's
// bookkeeping: fenced, unfenced and fenced again within 3ms.)
func TestUnfencedDeafBrokerNotRefenced(t *testing.T) {
	h := newHarness(t)
	ctx := h.ctx()
	h.raft.setLeader(1, 2)
	h.tick()
	if !h.c.Active() {
		t.Fatal("not active")
	}
	offset := func() int64 { return int64(h.store.Image().Offset()) }
	for _, id := range []int32{1, 2, 3} {
		if r := h.c.Register(ctx, wire.BrokerRegisterRequest{BrokerID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, ControllerEligible: true}); r.Err != wire.None {
			t.Fatalf("register %d: %v", id, r.Err)
		}
		if r := h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1, MetadataOffset: offset()}); r.Err != wire.None || r.Fenced {
			t.Fatalf("heartbeat %d: %v fenced=%v", id, r.Err, r.Fenced)
		}
	}
	beat := func(id int32, seq, acked int64) wire.BrokerHeartbeatResponse {
		return h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1, MetadataOffset: offset(), Seq: seq, AckedSeq: acked})
	}
	fenced := func(id int32) bool {
		b, _ := h.store.Image().Broker(id)
		return b.Fenced
	}
	// Broker 2 confirms answer 1, then none: deaf.
	beat(2, 1, 0)
	beat(2, 2, 1)
	for seq := int64(3); seq <= 7; seq++ { // 1.6s without a confirmation
		h.clock.Advance(400 * time.Millisecond)
		beat(1, 0, 0)
		beat(3, 0, 0)
		beat(2, seq, 2)
		h.tick()
	}
	if !fenced(2) {
		t.Fatal("deaf broker 2 not fenced")
	}

	// The link heals. Broker 2's next heartbeat unfences it, but its
	// caller gives up while the unfence is being proposed.
	entered, release := make(chan struct{}), make(chan struct{})
	h.raft.setOnPropose(func() {
		close(entered)
		<-release
	})
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan wire.BrokerHeartbeatResponse, 1)
	go func() {
		done <- h.c.Heartbeat(hctx, wire.BrokerHeartbeatRequest{BrokerID: 2, Incarnation: 1, MetadataOffset: offset(), Seq: 8, AckedSeq: 2})
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the unfencing heartbeat was never proposed")
	}
	cancel()
	if r := <-done; r.Err == wire.None {
		t.Fatalf("heartbeat answered although its caller gave up: %+v", r)
	}
	h.raft.setOnPropose(nil)
	close(release)
	waitUntil(t, "broker 2 unfenced", func() bool { return !fenced(2) })

	h.tick()
	if fenced(2) {
		t.Fatal("broker 2 fenced again at once, for the answers it missed while it was fenced")
	}
}
