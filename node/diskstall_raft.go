package node

import (
	"context"
	"errors"
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
// detected skips the election timeout: the most up-to-date other voter
// campaigns at once (raft's MsgTimeoutNow), and the stalled node, which
// would have to persist its new term before answering, is not needed for
// the majority.

// stallTransferTimeout bounds one leadership transfer on a stall: raft
// abandons a transfer after an election timeout, and TransferLeadership
// asks again until this runs out.
const stallTransferTimeout = 5 * time.Second

// handOffControllerOnStall asks raft to move the leadership elsewhere if
// this node leads the metadata quorum (on its own goroutine: the raft loop
// may already be blocked on the stalled disk, and then it no longer
// heartbeats and the others elect on their own).
func (n *Node) handOffControllerOnStall() {
	if n.raft == nil || n.runCtx == nil || !n.raft.Status().IsLeader {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(n.runCtx, stallTransferTimeout)
		defer cancel()
		err := n.raft.TransferLeadership(ctx, 0)
		switch {
		case err == nil:
			n.log.Warn("disk stalled: controller leadership handed to another voter")
		case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, context.Canceled):
		default:
			n.log.Warn("disk stalled: could not hand the controller leadership on; the other voters elect once its raft loop blocks", "err", err)
		}
	}()
}
