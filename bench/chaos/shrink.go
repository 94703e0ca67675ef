package chaos

import (
	"context"
	"fmt"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
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
	err := retryTooFewBrokers(ctx, shrinkRetry, func() error { return n.Admin.AlterReplicationFactor(ctx, n.Topic, shrinkFrom) })
	if err != nil {
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

// shrinkRetry is how often restoreReplicas asks again while too few brokers
// are live.
const shrinkRetry = 250 * time.Millisecond

// retryTooFewBrokers calls fn until it succeeds, fails otherwise than with
// InvalidReplicationFactor, or ctx ends (then the last error). The
// controller refuses a replication factor above the live brokers, and a
// node fenced by the last fault (killed, paused, held aside by a disk
// stall) or just restarted by HealAll is not live yet: asking again every
// `every` lets it come back. (A poll: nothing tells the nemesis when
// the controller unfences a broker.)
func retryTooFewBrokers(ctx context.Context, every time.Duration, fn func() error) error {
	for {
		err := fn()
		if err == nil || client.ErrorCode(err) != wire.InvalidReplicationFactor {
			return err
		}
		if !wait(ctx, every) {
			return err
		}
	}
}
