package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"paymentlog/raftnode"
)

// A controller whose disk stalls also hands its raft leadership on.
//
// Held heartbeats move the node's partition leaderships only through the
// active controller, and when that is the stalled node itself its raft loop
// runs on for as long as it has nothing to persist: it keeps heartbeating
// the other voters, so no one campaigns, and the first metadata record it
// proposes (its own broker's fencing) blocks the loop on the frozen disk.
// Only then do the others time out and elect (500–1000 ms later, the raft
// election timeout), and the new controller fences the node a session
// timeout after that. Transferring the leadership when the stall is
// detected skips the election timeout: the chosen voter campaigns at once
// (raft's MsgTimeoutNow), and the stalled node, which would have to persist
// its new term before answering, is not needed for the majority.
//
// The same holds for as long as the node holds its heartbeats back for its
// disk: during the stall, during the hold-down after it
// (diskstall_holddown.go), and while its disk is full (diskfull.go). raft
// has no switch that keeps a voter from campaigning, so such a node may win
// an election when the active controller dies, or be handed the leadership;
// then the cluster would be controlled by a node that /readyz and the
// controller's own image call aside. So the heartbeat loop asks, at every
// tick it holds heartbeats back, for the leadership to move on
// (handOffControllerWhileAside), one transfer at a time. The first of a
// spell aside goes to the most up-to-date other voter (raft's pick, by
// replication progress, among those it heard from within an election
// timeout: raftnode.bestTransferee) when the node's image shows every other voter
// live (registered, unfenced, not shutting down); otherwise, and at the
// next attempts, to the voters it shows live, in turn. With none (a
// one-voter quorum, every other voter fenced or down) the node keeps
// leading, which it logs once for the spell aside: a quorum without a
// leader would stop every metadata change, the other nodes' included.

// stallTransferTimeout bounds one leadership transfer: raft abandons a
// transfer after an election timeout, and TransferLeadership asks again
// until this runs out.
const stallTransferTimeout = 5 * time.Second

// controllerHandOff is the state of the hand-offs (Node.handOff).
type controllerHandOff struct {
	mu       sync.Mutex
	inFlight bool // a transfer runs (at most one)
	attempts int  // transfers started in this spell aside (handOffTarget)
	kept     bool // "no other voter can lead" was logged for this spell aside
	// handed and failed count the transfers that moved the leadership
	// and those that did not (not counted: ones ended by the leadership
	// moving otherwise, or by the node stopping).
	handed, failed uint64
}

// count adds one to c, a counter of h.
func (h *controllerHandOff) count(c *uint64) {
	h.mu.Lock()
	*c++
	h.mu.Unlock()
}

// handOffStats is what the metrics and /readyz show of the hand-offs.
type handOffStats struct {
	handed, failed uint64
	// keeps: aside for its disk, yet leading the metadata quorum because no
	// other voter is live to take it.
	keeps bool
}

func (n *Node) handOffStats() handOffStats {
	h := &n.handOff
	h.mu.Lock()
	s := handOffStats{handed: h.handed, failed: h.failed, keeps: h.kept}
	h.mu.Unlock()
	s.keeps = s.keeps && n.leadsQuorum()
	return s
}

// handOffControllerOnStall hands the controller's leadership on when a
// stall starts (diskStalled), without waiting for the heartbeat loop's
// next tick.
func (n *Node) handOffControllerOnStall() { n.handOffController("disk stalled") }

// handOffControllerWhileAside is the heartbeat loop's look at each tick:
// while aside (heartbeats held back for the disk) and leading the
// metadata quorum, the node hands that leadership on.
func (n *Node) handOffControllerWhileAside(aside bool) {
	if !aside {
		n.handOff.mu.Lock()
		n.handOff.kept, n.handOff.attempts = false, 0
		n.handOff.mu.Unlock()
		return
	}
	if !n.leadsQuorum() {
		return
	}
	why := n.diskStallReason()
	if why == "" {
		why = "disk full"
	}
	n.handOffController(why)
}

// leadsQuorum reports whether this node leads the metadata quorum.
func (n *Node) leadsQuorum() bool {
	return n.raft != nil && n.runCtx != nil && n.raft.Status().IsLeader
}

// handOffController asks raft to move the leadership to another live voter
// if this node leads the metadata quorum and no transfer runs yet. The
// transfer runs on its own goroutine: the raft loop may be blocked on the
// stalled disk, and then it no longer heartbeats and the others elect on
// their own.
func (n *Node) handOffController(why string) {
	if !n.leadsQuorum() {
		return
	}
	h := &n.handOff
	h.mu.Lock()
	if h.inFlight {
		h.mu.Unlock()
		return
	}
	img := n.store.Image()
	to, ok := handOffTarget(n.raft.Status().Voters, uint64(n.cfg.ID), img.Live, h.attempts)
	logKept := !ok && !h.kept
	if !ok {
		h.kept = true
		h.mu.Unlock()
		if logKept {
			n.log.Warn("aside for its disk, but this node keeps the controller leadership: no other voter is live to take it", "why", why)
		}
		return
	}
	h.inFlight, h.kept = true, false
	h.attempts++
	h.mu.Unlock()
	go func() {
		defer func() {
			h.mu.Lock()
			h.inFlight = false
			h.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(n.runCtx, stallTransferTimeout)
		defer cancel()
		err := n.raft.TransferLeadership(ctx, to)
		switch {
		case err == nil:
			h.count(&h.handed)
			n.log.Warn("aside for its disk: controller leadership handed to another voter", "to", n.raft.Status().Leader, "why", why)
		case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, context.Canceled) && n.runCtx.Err() != nil:
		default:
			h.count(&h.failed)
			n.log.Info("aside for its disk: could not hand the controller leadership on yet; trying again (a stalled raft loop leaves the other voters to elect on their own)",
				"to", to, "err", err, "why", why)
		}
	}()
}

// handOffTarget picks the voter to hand the leadership to at a spell's
// attempt-th try (from 0): at the first, with every voter other than self
// live, 0 (raft's pick: the most up-to-date); otherwise the other voters
// that live reports live, in turn (a voter that did not take over, or one
// just dead that the image does not show fenced yet, is not asked again
// before the others). ok is false when no other voter is live.
func handOffTarget(voters []uint64, self uint64, live func(int32) bool, attempt int) (to uint64, ok bool) {
	var cands []uint64
	others := 0
	for _, v := range voters {
		if v == self {
			continue
		}
		others++
		if live(int32(v)) {
			cands = append(cands, v)
		}
	}
	switch {
	case len(cands) == 0:
		return 0, false
	case attempt == 0 && len(cands) == others:
		return 0, true
	}
	return cands[attempt%len(cands)], true
}
