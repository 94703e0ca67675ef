package controller

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/node/metadata"
	"paymentlog/wire"
)

// TestDeafPreviousControllerFencedSoon: node 2, the active controller, can
// send but no longer receive, so raft moved leadership to node 1
// (CheckQuorum). Node 2's broker keeps heartbeating (its heartbeats
// arrive) but confirms none of node 1's answers. It must be fenced within
// PrevControllerGrace plus half a session of node 1 taking over, as a
// silent previous controller is after PrevControllerGrace, not 1.5
// sessions after its first heartbeat here: the partitions it leads cannot
// take writes meanwhile (a chaos run: 0.8 s to elect node 1, then 1.5 s
// more, for a fault of 2.2 s). A previous controller that confirms the
// answers stays unfenced.
func TestDeafPreviousControllerFencedSoon(t *testing.T) {
	for _, deaf := range []bool{true, false} {
		t.Run(fmt.Sprintf("deaf=%t", deaf), func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			entry := func(recs ...metadata.Record) []byte { return mustEntry(t, recs...) }
			marker := metadata.ControllerMarker{ControllerID: 2, Term: 1}
			h.raft.commitForeign(entry(marker))
			for id := int32(1); id <= 3; id++ {
				h.raft.commitForeign(entry(marker, metadata.BrokerRegistered{ID: id, Addr: fmt.Sprintf("127.0.0.1:71%02d", id), Incarnation: 1, ControllerEligible: true}))
				h.raft.commitForeign(entry(marker, metadata.BrokerUnfenced{ID: id, Incarnation: 1}))
			}
			h.raft.setLeader(1, 2)
			h.tick()
			if !h.c.Active() {
				t.Fatal("node 1 not active")
			}
			start := h.clock.Now()
			// A deaf broker applies nothing more: it reports the offset it had.
			deafOffset := int64(h.store.Image().Offset())
			seq := map[int32]int64{}
			acked := map[int32]int64{}
			fenced := func(id int32) bool {
				b, _ := h.store.Image().Broker(id)
				return b.Fenced
			}
			step := h.c.cfg.HeartbeatInterval
			var fencedAfter time.Duration
			for h.clock.Now().Sub(start) < 2*h.c.cfg.SessionTimeout {
				for id := int32(1); id <= 3; id++ {
					seq[id]++
					offset := int64(h.store.Image().Offset())
					if id == 2 && deaf {
						offset = deafOffset
					}
					r := h.c.Heartbeat(ctx, wire.BrokerHeartbeatRequest{BrokerID: id, Incarnation: 1,
						MetadataOffset: offset, Seq: seq[id], AckedSeq: acked[id]})
					if r.Err != wire.None {
						t.Fatalf("heartbeat %d: %v", id, r.Err)
					}
					if id != 2 || !deaf {
						acked[id] = seq[id] // the answer got back
					}
				}
				h.tick()
				if fenced(2) && fencedAfter == 0 {
					fencedAfter = h.clock.Now().Sub(start)
				}
				if fenced(1) || fenced(3) {
					t.Fatalf("a broker that confirms the answers was fenced %v after the election", h.clock.Now().Sub(start))
				}
				h.clock.Advance(step)
			}
			t.Logf("fenced %v after the election", fencedAfter)
			switch limit := h.c.cfg.PrevControllerGrace + h.c.cfg.SessionTimeout/2 + 2*step; {
			case !deaf && fencedAfter != 0:
				t.Fatalf("the previous controller, confirming the answers, was fenced %v after the election", fencedAfter)
			case deaf && fencedAfter == 0:
				t.Fatal("the deaf previous controller was not fenced")
			case deaf && fencedAfter > limit:
				t.Fatalf("the deaf previous controller was fenced %v after the election, want at most %v", fencedAfter, limit)
			}
		})
	}
}
