package segment

import (
	"math"
	"os"
)

// A tombstone is removed by a pass that starts above it (it lies below
// the cleaner point) once its batch is older than DeleteRetention. A pass
// runs when something is dirty, so on a partition no longer written the
// last tombstones would stay for good, and with them a customer's deleted
// key. So each pass notes the oldest batch timestamp of the tombstones it
// kept below the point where the next pass starts
// (cleaner-tombstone-checkpoint: the timestamp in unix milliseconds; absent
// when there is none), and a pass runs with nothing dirty once that
// tombstone is past DeleteRetention (CompactResult.TombstonesDue). The
// file is what makes it survive a restart; a log whose passes ran on a
// build without it has none until its next pass.

const cleanerTombstoneFile = "cleaner-tombstone-checkpoint"

// noTombstone is cleanerTombstone when no tombstone is known.
const noTombstone = math.MaxInt64

// oldestTombstone returns the oldest batch timestamp of the tombstones the
// last pass kept below the cleaner point (noTombstone: none). compactMu
// held.
func (l *Log) oldestTombstone() int64 {
	if l.cleanerTombstone != 0 {
		return l.cleanerTombstone
	}
	ts, ok, err := readOffsetCheckpoint(l.fs, join(l.dir, cleanerTombstoneFile))
	if err != nil {
		l.logger.Warn("segment: unreadable cleaner tombstone checkpoint; the next pass rewrites it", "err", err)
		ok, ts = true, 0 // due: a pass finds the tombstones there are
	}
	if !ok {
		ts = noTombstone
	}
	l.cleanerTombstone = max(ts, 1)
	return l.cleanerTombstone
}

// setOldestTombstone stores ts (noTombstone: none) after a pass. compactMu
// held.
func (l *Log) setOldestTombstone(ts int64) error {
	ts = max(ts, 1)
	if ts == l.oldestTombstone() {
		return nil
	}
	path := join(l.dir, cleanerTombstoneFile)
	if ts == noTombstone {
		if err := l.fs.Remove(path); err != nil && !os.IsNotExist(err) {
			return err
		}
		if err := l.fs.SyncDir(l.dir); err != nil {
			return err
		}
	} else if err := writeOffsetCheckpoint(l.fs, path, ts); err != nil {
		return err
	}
	l.cleanerTombstone = ts
	return nil
}
