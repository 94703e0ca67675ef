package segment

import (
	"context"
	"os"
)

// deletedSuffix marks the files of a segment that left the log: a deletion
// renames them before unlinking them, and Open removes any it finds.
const deletedSuffix = ".deleted"

// DeleteBefore removes whole sealed segments entirely below offset and raises
// the log start offset to offset (raft compaction, DeleteRecords, retention).
// An offset at or below the log start is a no-op; one beyond the log end is
// an *OffsetOutOfRangeError. Appends go on while it runs: see deleteFront.
func (l *Log) DeleteBefore(ctx context.Context, offset int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.appendMu.Lock()
	err := l.writableLocked()
	start, leo := l.mu.logStart, l.mu.leo
	l.appendMu.Unlock()
	switch {
	case err != nil:
		return err
	case offset <= start:
		return nil
	case offset > leo:
		return &OffsetOutOfRangeError{Requested: offset, Start: start, End: leo}
	}
	_, err = l.deleteFront(offset)
	return err
}

// deleteFront makes logStart (above the log start and at most the log end,
// which only grows while deleteMu is held) the log start offset and deletes
// the segments wholly below it, in three steps of which only the second
// holds appendMu, and that one touches memory only:
//
//  1. The log-start checkpoint is replaced with logStart (written, fsynced,
//     renamed, directory fsynced). From here on a crash opens the log at
//     logStart at least: Open removes the segments wholly below the
//     checkpoint, whatever names they have.
//  2. Under appendMu and Log.mu: the segments leave the list, the log
//     start moves to logStart and the epoch cache drops the epochs below
//     it. Readers see the new start from here on; it is already durable.
//  3. Each deleted segment's files are renamed to *.deleted, the log's
//     references to their mappings and files dropped (the memory is
//     unmapped once the last View of it is released, never under a
//     reader, and the files keep their size: no access past a file's
//     end), the renamed files unlinked and the directory fsynced.
//
// The leader-epoch checkpoint is not rewritten: entries below the log
// start it may keep are dropped by Open (and by the next rewrite, at an
// append that opens an epoch). deleteMu held. It returns the number of
// segments deleted.
func (l *Log) deleteFront(logStart int64) (int, error) {
	if err := writeOffsetCheckpoint(l.fs, join(l.dir, logStartFile), logStart); err != nil {
		return 0, l.ioErr(err)
	}
	l.appendMu.Lock()
	l.mu.Lock()
	k := 0
	for k < len(l.mu.segs)-1 && l.mu.segs[k].next <= logStart {
		k++
	}
	removed := append([]*segment(nil), l.mu.segs[:k]...)
	l.mu.segs = append([]*segment(nil), l.mu.segs[k:]...)
	if logStart > l.mu.logStart {
		l.mu.logStart = logStart
	}
	l.mu.epochs.truncateFromStart(l.mu.logStart)
	l.mu.Unlock()
	l.appendMu.Unlock()
	return k, l.discardSegments(removed)
}

// discardSegments removes the files of segments no longer in the log
// (deleteFront's third step). A failure is returned but harms nothing: the
// log start is durable and Open removes what is left below it (and every
// *.deleted file). deleteMu held, appendMu not.
func (l *Log) discardSegments(segs []*segment) error {
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = l.ioErr(err)
		}
	}
	var renamed []string
	for _, s := range segs {
		a, b, c := l.segPaths(s.base)
		for _, p := range []string{a, b, c} {
			err := l.fs.Rename(p, p+deletedSuffix)
			switch {
			case err == nil:
				renamed = append(renamed, p+deletedSuffix)
			case !os.IsNotExist(err): // an index may be missing
				keep(err)
				// Free the name anyway: a segment created there later
				// (a full truncation to this base) must be a new file,
				// not this one, which Views may still map.
				if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
					keep(err)
				}
			}
		}
	}
	for _, s := range segs {
		s.closeFiles()
	}
	for _, p := range renamed {
		if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
			keep(err)
		}
	}
	keep(l.fs.SyncDir(l.dir))
	if firstErr != nil {
		l.logger.Warn("segment: removing deleted segments' files; the next open removes what is left", "err", firstErr)
	}
	return firstErr
}
