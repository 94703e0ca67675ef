package raftnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"paymentlog/segment"
)

// Scrubbing the metadata log. Like a partition's (segment/scrub.go), it
// reads what recovery trusts — the entry log's segments, sealed and the
// active one up to the applied index (committed and durable: no write or
// truncation changes those bytes), and the snapshot files — and checks
// each batch's CRC and offset and each snapshot's CRC, so that silent disk
// corruption is found before a restart, a follower's catch-up or a snapshot
// restore meets it. It runs on the caller's goroutine (ScrubNow), never on
// the Ready loop: it takes segment.Log's read lock only to look up a
// segment and reads the mapped bytes without it, so the loop never waits
// on its I/O.
//
// A corrupt entry: segment marks the segment for repair (durably) and
// fails the log; ScrubNow then stops the loop with an error wrapping
// segment.ErrScrubCorrupt (Err, Done), having recorded the last entry of
// its log, and the node is restarted. At the next Start, before the log is
// opened and repaired, scrub_repair.go sets a copy of the segments aside
// and puts the node under the rejoin guard: the repair truncates entries
// this node acknowledged, so it must not vote until it has caught up (a
// single voter refuses to start instead; a learner only refetches). If the
// repaired log still ends at the recorded entry, nothing was taken out:
// the guard and the copy are undone (scrub_sound.go says why only then).
//
// A corrupt snapshot file is repaired at once, on the loop, without a
// restart: the node holds its latest snapshot in memory (it restored from
// it or took it), so that file is written again from there; an older one
// (kept as a fallback only) is removed. A restart would be worse: with its
// latest snapshot unreadable and the log compacted past the older one, the
// node would not start at all.

// scrubChunk is how much a segment Scrub call checks before the throttle.
const scrubChunk = 256 << 10

// ScrubSummary is what one ScrubNow pass did.
type ScrubSummary struct {
	Bytes     int64 // entry log and snapshot bytes checked
	Snapshots int   // snapshot files checked
	// SnapshotsRewritten counts the corrupt snapshot files repaired
	// (rewritten from memory, or an older one removed).
	SnapshotsRewritten int
}

// ScrubStats are the node's scrub counters since Start (metrics).
type ScrubStats struct {
	Bytes, Passes uint64
	// Corrupt counts corrupt entries and snapshot files found.
	Corrupt uint64
	// SnapshotsRewritten counts the corrupt snapshot files repaired.
	SnapshotsRewritten uint64
	// QuarantineBytes is the size of the copies repairs set aside in the
	// metadata directory (segment.ScrubQuarantinePrefix), still there.
	QuarantineBytes int64
	// QuarantinesRemoved counts the quarantines SweepScrubQuarantines
	// removed.
	QuarantinesRemoved uint64
}

type scrubCounters struct {
	bytes, passes, corrupt, snapsRewritten atomic.Uint64
	sweep                                  quarantineSweep // scrub_quarantine.go
}

// ScrubStats returns the scrub counters. Safe to call at any time.
func (n *Node) ScrubStats() ScrubStats {
	s := ScrubStats{
		Bytes:              n.scrub.bytes.Load(),
		Passes:             n.scrub.passes.Load(),
		Corrupt:            n.scrub.corrupt.Load(),
		SnapshotsRewritten: n.scrub.snapsRewritten.Load(),
		QuarantinesRemoved: n.scrub.sweep.removed.Load(),
	}
	if sl, ok := n.st.log.(*segmentLog); ok {
		s.QuarantineBytes = sl.log.QuarantinedBytes()
	}
	return s
}

// ScrubNow runs one pass over the metadata log's entries and snapshot
// files, reading at most bytesPerSec (0: unlimited), and returns what it
// checked. A corrupt entry stops the node (see above): the error wraps
// segment.ErrScrubCorrupt. It returns early with ctx's error, and with
// ErrStopped once the node is closed. Not safe for concurrent passes.
func (n *Node) ScrubNow(ctx context.Context, bytesPerSec int64) (ScrubSummary, error) {
	var s ScrubSummary
	throttle := func(b int64) error {
		if bytesPerSec <= 0 || b <= 0 {
			return ctx.Err()
		}
		t := time.NewTimer(time.Duration(float64(b) / float64(bytesPerSec) * float64(time.Second)))
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-n.donec:
			return n.stoppedErr()
		case <-t.C:
			return nil
		}
	}
	if err := n.scrubEntries(ctx, &s, throttle); err != nil {
		return s, err
	}
	if err := n.scrubSnapshots(ctx, &s, throttle); err != nil {
		return s, err
	}
	n.scrub.passes.Add(1)
	return s, nil
}

// scrubEntries checks the entry log up to the applied index.
func (n *Node) scrubEntries(ctx context.Context, s *ScrubSummary, throttle func(int64) error) error {
	sl, ok := n.st.log.(*segmentLog)
	if !ok {
		return nil // a test's in-memory log
	}
	var p segment.ScrubPoint
	for {
		select {
		case <-n.donec:
			return n.stoppedErr()
		default:
		}
		// Applied entries are committed (never truncated) and durable.
		below := int64(n.Status().Applied) + 1
		next, checked, done, err := sl.log.ScrubBelow(p, scrubChunk, below)
		s.Bytes += checked
		n.scrub.bytes.Add(uint64(checked))
		switch {
		case errors.Is(err, segment.ErrScrubCorrupt):
			n.scrub.corrupt.Add(1)
			n.lg.Error("raftnode: the metadata log's scrub found a corrupt entry; stopping: the next start sets a copy aside and truncates the log there, and a voter that lost entries catches up from the other voters before voting again",
				"err", err)
			n.failFromScrub(err)
			return err
		case errors.Is(err, segment.ErrClosed):
			return ErrStopped
		case err != nil:
			return fmt.Errorf("raftnode: scrub: %w", err)
		case done:
			return nil
		}
		p = next
		if err := throttle(checked); err != nil {
			return err
		}
	}
}

// failFromScrub stops the Ready loop with err (Err, Done): segment has
// already failed the log, which refuses every write from now on (an append
// meanwhile stops the loop with the same error). The loop, stopping,
// records where the log ends for the repair (scrub_logend.go).
func (n *Node) failFromScrub(err error) {
	select {
	case n.opc <- func() { n.fatal = err }:
	case <-n.stopc:
	case <-n.donec:
	}
}

// scrubSnapshots checks every snapshot file's CRC and name; a corrupt one
// is repaired on the loop (repairSnapshotFile).
func (n *Node) scrubSnapshots(ctx context.Context, s *ScrubSummary, throttle func(int64) error) error {
	names, err := n.st.files.List()
	if err != nil {
		return fmt.Errorf("raftnode: scrub: %w", err)
	}
	for _, sf := range listSnapFiles(names) {
		b, err := n.st.files.ReadFile(sf.name)
		if errors.Is(err, os.ErrNotExist) {
			continue // replaced by a newer snapshot since
		}
		if err != nil {
			return fmt.Errorf("raftnode: scrub: %w", err)
		}
		s.Snapshots++
		s.Bytes += int64(len(b))
		n.scrub.bytes.Add(uint64(len(b)))
		if bad := checkSnapFile(sf, b); bad != nil {
			n.scrub.corrupt.Add(1)
			var repaired bool
			var rerr error
			if err := n.do(ctx, func() { repaired, rerr = n.repairSnapshotFile(sf, bad) }); err != nil {
				return err
			}
			if rerr != nil {
				return rerr
			}
			if repaired {
				s.SnapshotsRewritten++
			}
		}
		if err := throttle(int64(len(b))); err != nil {
			return err
		}
	}
	return nil
}

// checkSnapFile reports why b, the contents of sf, is not a sound snapshot.
func checkSnapFile(sf snapFile, b []byte) error {
	snap, err := decodeSnapFile(b)
	if err != nil {
		return err
	}
	if md := snap.GetMetadata(); md.GetIndex() != sf.index || md.GetTerm() != sf.term {
		return fmt.Errorf("%w: %s holds snapshot %d/%d", ErrCorruptState, sf.name, md.GetIndex(), md.GetTerm())
	}
	return nil
}

// repairSnapshotFile repairs sf, which the scrub found corrupt (bad): the
// latest snapshot is written again from memory, an older one removed. It
// reads the file again first: a snapshot taken since replaced or removed
// it. A failed write stops the node like any storage failure. Loop only.
func (n *Node) repairSnapshotFile(sf snapFile, bad error) (repaired bool, err error) {
	b, rerr := n.st.files.ReadFile(sf.name)
	if errors.Is(rerr, os.ErrNotExist) || (rerr == nil && checkSnapFile(sf, b) == nil) {
		return false, nil
	}
	md := n.st.snap.GetMetadata()
	if md.GetIndex() == sf.index && md.GetTerm() == sf.term {
		if err := n.st.writeSnapshot(n.st.snap); err != nil {
			n.fatal = fmt.Errorf("raftnode: rewriting the corrupt snapshot %s: %w", sf.name, err)
			return false, n.fatal
		}
		n.scrub.snapsRewritten.Add(1)
		n.lg.Warn("raftnode: the metadata scrub found the latest snapshot file corrupt; wrote it again from memory",
			"file", sf.name, "offset", sf.index, "epoch", sf.term, "err", bad)
		return true, nil
	}
	if err := n.st.files.Remove(sf.name); err != nil {
		n.lg.Warn("raftnode: the metadata scrub found an older snapshot file corrupt and could not remove it", "file", sf.name, "err", err)
		return false, nil
	}
	n.scrub.snapsRewritten.Add(1)
	n.lg.Warn("raftnode: the metadata scrub found an older snapshot file corrupt; removed it (the latest one is sound)",
		"file", sf.name, "offset", sf.index, "epoch", sf.term, "latest", md.GetIndex(), "err", bad)
	return true, nil
}
