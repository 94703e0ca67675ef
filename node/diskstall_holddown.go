package node

import (
	"fmt"
	"time"

	"paymentlog/node/metadata"
)

// A disk that stalls again and again keeps the node aside for a while.
//
// A flapping disk (a SAN path failing over every few seconds, a dying SSD)
// would make the node step aside and come back at every stall: each
// return takes its followers and, a --preferred-leader-delay later, its
// preferred leaderships back, and each new stall stops those partitions'
// acks=all writes again for the stall timeout and the fencing. So a stall
// that starts within relapseWindow (10 min) of the end of the previous one
// is followed by a hold-down (relapse.go, the rule a disk that fills again
// follows): once its operation has returned the node goes on holding back
// its heartbeats for backoffMin (30 s), doubling at each further relapse up
// to backoffMax (10 min), counted from the stall's end. A stall during a
// hold-down is a relapse too. The first stall in a window has no hold-down,
// and a disk that holds for relapseWindow starts afresh. /readyz names the
// hold-down and its end, and paymentlog_disk_stall_hold_down_seconds counts
// it down.
//
// A hold-down ends early, for good, once a partition this node replicates
// has fewer in-sync replicas than its min.insync.replicas (by the node's
// metadata image): then the cluster needs the node, whose disk works
// again, more than it needs to avoid churn. Without that, disks that stall
// together (one SAN under every node; measured: three loop disks
// throttled to below the load, each node's flushes outlasting the timeout
// twice in 10 s) kept every node fenced at once for the whole hold-down,
// the partition offline and its producers timing out.

// stallHoldDown is the hold-down's state (under diskStall.mu), a pure
// state machine: the caller passes the time.
type stallHoldDown struct {
	relapseBackoff               // stalls are the failures
	gap            time.Duration // how long after the previous stall's end it started
	until          time.Time     // heartbeats held back until then; zero: no hold-down
	holding        bool          // a hold-down was in force at the last look (for the log)
	count          uint64        // hold-downs imposed since start
}

// started records a stall starting at now.
func (h *stallHoldDown) started(now time.Time) {
	h.gap = max(now.Sub(h.lastEnd), 0) // 0: the same operation, stalled again after the device wrote
	h.failed(now)                      // sets backoff: the hold-down this stall imposes (0: none)
	h.until = time.Time{}
}

// stopped records the stall ending at now, which starts its hold-down.
func (h *stallHoldDown) stopped(now time.Time) {
	h.ended(now)
	if h.backoff > 0 {
		h.until = now.Add(h.backoff)
		h.count++
	}
}

// cut ends the hold-down now.
func (h *stallHoldDown) cut() { h.until = time.Time{} }

// left is the hold-down left at now (0: none).
func (h *stallHoldDown) left(now time.Time) time.Duration {
	if h.until.IsZero() {
		return 0
	}
	return max(h.until.Sub(now), 0)
}

// reason says why the node is still aside at now ("" when it is not),
// e.g. "disk stall hold-down: the disk stalled again 5s after the previous
// stall ended; heartbeats held back 30s after this one (until 12:00:35)".
func (h *stallHoldDown) reason(now time.Time) string {
	if h.left(now) == 0 {
		return ""
	}
	return fmt.Sprintf("disk stall hold-down: the disk stalled again %v after the previous stall ended; heartbeats held back %v after this one (until %s)",
		h.gap.Round(time.Second), h.backoff, h.until.UTC().Format(time.TimeOnly))
}

// underMinISR names a partition node id replicates in img whose ISR is
// smaller than its topic's min.insync.replicas, e.g. "payments-0 (ISR [2],
// min.insync.replicas 2)"; "" for none.
func underMinISR(img *metadata.Image, id int32) string {
	for _, p := range img.PartitionsOf(id) {
		minISR := int32(1)
		if t, ok := img.Topic(p.Topic); ok {
			minISR = t.MinISR
		}
		if int32(len(p.ISR)) < minISR {
			return fmt.Sprintf("%s-%d (ISR %v, min.insync.replicas %d)", p.Topic, p.Partition, p.ISR, minISR)
		}
	}
	return ""
}

// neededDuringHoldDown is underMinISR for this node's current image ("" without one).
func (n *Node) neededDuringHoldDown() string {
	if n.store == nil {
		return ""
	}
	return underMinISR(n.store.Image(), n.cfg.ID)
}
