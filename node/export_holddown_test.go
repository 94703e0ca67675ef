package node

import "time"

// HoldDown puts the node in a disk-stall hold-down of backoffMax (10 min)
// from now, as after a stall that relapsed 5 s after the previous one's
// end: its heartbeat loop holds heartbeats back from its next tick (unless
// a partition it replicates is below min.insync.replicas).
func (n *Node) HoldDown() {
	now := n.stall.clock()
	n.stall.mu.Lock()
	defer n.stall.mu.Unlock()
	h := &n.stall.mu.hold
	h.lastEnd, h.backoff, h.gap = now, backoffMax, 5*time.Second
	h.until = now.Add(h.backoff)
	h.count++
}
