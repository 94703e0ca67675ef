package chaos

import (
	"context"
	"fmt"
	"time"
)

// The topic's replication factor during and after a Shrink fault.
const (
	shrinkFrom = 3
	shrinkTo   = 2
)

// shrink runs a Shrink fault: the topic's replication factor goes down to
// shrinkTo (each partition drops a replica as soon as the ones it keeps
// are in sync), stays there for Hold, and goes back up to shrinkFrom; the
// re-added replicas copy their partitions while the next faults come.
func (n *Nemesis) shrink(ctx context.Context, f Fault) Event {
	ev := Event{Fault: f, Kind: Shrink, Target: "topic " + n.Topic}
	if n.Admin == nil {
		ev.Note = "skipped: no admin client"
		return ev
	}
	ev.At = time.Since(n.Start)
	cctx, cancel := context.WithTimeout(ctx, n.readyTimeout())
	err := n.Admin.AlterReplicationFactor(cctx, n.Topic, shrinkTo)
	cancel()
	if err != nil {
		ev.NotApplied = true
		ev.Note = "error: " + err.Error()
	} else {
		n.mu.Lock()
		n.shrunk = true
		n.mu.Unlock()
		wait(ctx, f.Hold)
		if err := n.restoreReplicas(context.WithoutCancel(ctx)); err != nil {
			ev.Note = joinNote(ev.Note, "error: "+err.Error())
		}
	}
	healed := time.Now()
	ev.Healed = healed.Sub(n.Start)
	if err := n.waitReady(ctx, false); err != nil {
		ev.Note = joinNote(ev.Note, fmt.Sprintf("not ready %v after the fault: %v", n.readyTimeout(), err))
	}
	ev.Healthy = time.Since(healed)
	return ev
}

// restoreReplicas gives the topic its replication factor back after a
// Shrink (nothing when none is in effect). The change is committed when it
// returns; the copies are made afterwards.
func (n *Nemesis) restoreReplicas(ctx context.Context) error {
	n.mu.Lock()
	shrunk := n.shrunk
	n.mu.Unlock()
	if !shrunk {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, n.readyTimeout())
	defer cancel()
	if err := n.Admin.AlterReplicationFactor(ctx, n.Topic, shrinkFrom); err != nil {
		return fmt.Errorf("chaos: replication factor back to %d: %w", shrinkFrom, err)
	}
	n.mu.Lock()
	n.shrunk = false
	n.mu.Unlock()
	return nil
}

// readyTimeout is ReadyTimeout, or its default (20 s) when not set.
func (n *Nemesis) readyTimeout() time.Duration {
	if n.ReadyTimeout > 0 {
		return n.ReadyTimeout
	}
	return 20 * time.Second
}
