package node

import (
	"context"
	"errors"
	"time"

	"paymentlog/raftnode"
)

// The metadata log's scrub quarantines (what its repairs set aside,
// raftnode's scrub_repair.go) are swept like the partitions' (broker's
// quarantine_sweep.go), on the same retention (the cluster's
// log.scrub.quarantine.retention.ms, else --log-scrub-quarantine-retention)
// and the same cadence (once at the start, then every
// --retention-check-interval). raftnode.Node.SweepScrubQuarantines decides
// (retention passed, not a single voter's refused start, not the only
// voter, rejoin guard lifted, applied past the quarantine's last index, or
// past a bound of it when only the rotten segment's copy is there), removes,
// logs and counts.

// sweepMetadataQuarantinesLoop sweeps the metadata log's quarantines until
// ctx ends.
func (n *Node) sweepMetadataQuarantinesLoop(ctx context.Context) error {
	every := n.cfg.RetentionCheckInterval
	if every <= 0 {
		every = DefaultRetentionCheckInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		n.SweepMetadataQuarantines(time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// SweepMetadataQuarantines sweeps the metadata log's scrub quarantines as
// of now (see above) and returns how many it removed. A failure is logged;
// the next sweep tries again.
func (n *Node) SweepMetadataQuarantines(now time.Time) int {
	removed, err := n.raft.SweepScrubQuarantines(now, n.broker.QuarantineRetention())
	if err != nil && !errors.Is(err, raftnode.ErrStopped) {
		n.log.Warn("sweeping the metadata log's scrub quarantines", "err", err)
	}
	return len(removed)
}
