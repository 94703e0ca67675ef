package controller

import (
	"fmt"
	"testing"
	"time"

	"paymentlog/node/metadata"
)

// TestShortGraceGoesToTheControllerJustReplaced: node 2 was the active
// controller for a long time; node 3 then led for a very short turn (its
// marker committed, but not yet applied here) before node 1 took over. The
// short PrevControllerGrace belongs to node 3's broker, the controller node
// 1 replaced, and every other broker, node 2's included, gets a full
// session. activate read the previous controller from the image before its
// own marker, which could still lack node 3's marker, so node 2's broker,
// alive and heartbeating to whoever leads, was fenced after a few heartbeat
// intervals while node 3's got a whole session.
func TestShortGraceGoesToTheControllerJustReplaced(t *testing.T) {
	h := newHarness(t)
	entry := func(recs ...metadata.Record) []byte { return mustEntry(t, recs...) }
	// Node 2's long tenure: brokers 1-3 registered and unfenced.
	h.raft.commitForeign(entry(metadata.ControllerMarker{ControllerID: 2, Term: 1}))
	for id := int32(1); id <= 3; id++ {
		h.raft.commitForeign(entry(metadata.ControllerMarker{ControllerID: 2, Term: 1},
			metadata.BrokerRegistered{ID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, ControllerEligible: true}))
		h.raft.commitForeign(entry(metadata.ControllerMarker{ControllerID: 2, Term: 1},
			metadata.BrokerUnfenced{ID: id, Incarnation: 1}))
	}
	// Node 3's short turn: its marker is committed, not yet applied here.
	h.raft.commitForeignLate(entry(metadata.ControllerMarker{ControllerID: 3, Term: 2}))

	h.raft.setLeader(1, 3)
	h.tick()
	if !h.c.Active() {
		t.Fatal("node 1 not active")
	}
	if got := h.store.Image().ControllerID(); got != 1 {
		t.Fatalf("image controller %d, want 1", got)
	}
	// Past the short grace, within a session: only node 3's broker is fenced.
	h.clock.Advance(h.c.cfg.PrevControllerGrace + 50*time.Millisecond)
	h.tick()
	for id, want := range map[int32]bool{1: false, 2: false, 3: true} {
		if b, _ := h.store.Image().Broker(id); b.Fenced != want {
			t.Errorf("broker %d fenced=%t, want %t", id, b.Fenced, want)
		}
	}
	// A session after the election everyone silent is fenced.
	h.clock.Advance(time.Second)
	h.tick()
	for id := int32(2); id <= 3; id++ {
		if b, _ := h.store.Image().Broker(id); !b.Fenced {
			t.Errorf("broker %d not fenced after a whole session", id)
		}
	}
}

// mustEntry encodes recs as one metadata log entry.
func mustEntry(t *testing.T, recs ...metadata.Record) []byte {
	t.Helper()
	data, err := metadata.EncodeEntry(recs...)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
