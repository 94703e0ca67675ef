package node

import (
	"context"
	"errors"
	"time"

	"paymentlog/raftnode"
	"paymentlog/segment"
)

// The metadata log (__cluster_metadata-0) is scrubbed like the partitions'
// logs (broker's scrub.go), on the same knobs: a pass every
// LogScrubInterval (the first LogScrubDelay after the start, or one
// LogScrubInterval if that is shorter), reading at most LogScrubBytesPerSec.
// It runs beside the partitions' passes, not inside them: the metadata log
// is a few MiB, and one pass of it does not wait for a pass over every
// partition. raftnode.Node.ScrubNow checks its entries (sealed segments,
// and the active one up to the applied index) and snapshot files, off the
// raft loop. A corrupt entry stops the raft node with an error wrapping
// segment.ErrScrubCorrupt; watchRaft then ends the node with it, so the
// in-process restart (--log-scrub-restart) applies, and the next start
// repairs the log (raftnode's scrub_repair.go), under the rejoin guard if
// the node may vote and its log no longer ends at the entry it ended at
// when the scrub stopped it (scrub_sound.go). A corrupt snapshot file is
// repaired at once without a restart.

// scrubMetadataLoop runs the metadata log's scrub passes until ctx ends or
// the raft node stops.
func (n *Node) scrubMetadataLoop(ctx context.Context) error {
	wait := min(n.cfg.LogScrubDelay, n.cfg.LogScrubInterval)
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		start := time.Now()
		s, err := n.raft.ScrubNow(ctx, n.cfg.LogScrubBytesPerSec)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, segment.ErrScrubCorrupt), errors.Is(err, raftnode.ErrStopped):
			return nil // the raft node stopped: watchRaft ends the node with its error
		case err != nil:
			n.log.Warn("metadata log scrub pass stopped", "err", err)
		default:
			n.log.Info("metadata log scrub pass done", "bytes", s.Bytes, "snapshots", s.Snapshots,
				"snapshots_repaired", s.SnapshotsRewritten, "took", time.Since(start).Round(time.Millisecond))
		}
		wait = max(n.cfg.LogScrubInterval-time.Since(start), 0)
	}
}

// ScrubMetadataNow runs one pass over the metadata log now, at
// LogScrubBytesPerSec (see scrubMetadataLoop).
func (n *Node) ScrubMetadataNow(ctx context.Context) (raftnode.ScrubSummary, error) {
	return n.raft.ScrubNow(ctx, n.cfg.LogScrubBytesPerSec)
}
