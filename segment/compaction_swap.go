package segment

import (
	"os"
	"slices"
	"strconv"
	"strings"
)

// The swap: how a compaction pass puts the one segment it wrote (first
// offset B, next offset N) in place of the group of sealed segments it
// cleaned, those of bases in [B, N), so that a crash at any point leaves
// either all of the old segments or the new one:
//
//  1. rename the new <B>.log.cleaned.tmp to <B>.log.<N>.swap (both names
//     20-digit offsets) and fsync the directory. This is the commit: from
//     here on the swap is finished, by the pass or by Open.
//  2. finishSwap: remove the old .index and .timeindex files and the
//     group's other .log files, fsync the directory; rename the .swap over
//     <B>.log, fsync the directory.
//  3. rename the new indexes (<B>.index.cleaned.tmp, <B>.timeindex.cleaned.tmp)
//     into place, fsync the directory.
//
// Open finishes any swap it finds (step 2) before it lists the segments,
// and then removes *.tmp files (the new segment's indexes are rebuilt by
// its scan); a crash before step 1 leaves the old segments and the
// *.tmp files Open removes. A failure after step 1 fails the log
// (ErrLogFailed): its files are then not the segments it holds in memory,
// and only Open may go on from there.

const swapSuffix = ".swap"

// swapName is the name of a committed, unfinished swap's new segment file.
func swapName(base, next int64) string {
	return segmentName(base) + ".log." + segmentName(next) + swapSuffix
}

// parseSwapName returns the offsets a swapName holds.
func parseSwapName(name string) (base, next int64, ok bool) {
	s, ok := strings.CutSuffix(name, swapSuffix)
	if !ok {
		return 0, 0, false
	}
	a, b, ok := strings.Cut(s, ".log.")
	if !ok || len(a) != 20 || len(b) != 20 {
		return 0, 0, false
	}
	base, err1 := strconv.ParseInt(a, 10, 64)
	next, err2 := strconv.ParseInt(b, 10, 64)
	return base, next, err1 == nil && err2 == nil && base >= 0 && next > base
}

// groupAt returns the index in segs (the log's list) of g's first segment
// when g's segments are still there, in a row, sealed, not the active one
// and as the pass read them; -1 when not (a deletion removed one, or a
// truncation cut one, before the swap took deleteMu).
func groupAt(segs []*segment, g []cleanable) int {
	i := slices.Index(segs, g[0].s)
	if i < 0 || i+len(g) > len(segs)-1 {
		return -1
	}
	for k, c := range g {
		s := segs[i+k]
		if s != c.s || !s.sealed || s.next != c.next || s.size != int64(len(c.data)) {
			return -1
		}
	}
	return i
}

// swapCleaned puts the cleaned files of g's segments (tmpLog and its
// indexes) in their place (see above) and the new segment in the log in
// place of g's. It reports whether the swap was committed: if not,
// nothing changed and the caller removes the new files. deleteMu is held
// throughout, so the segments cannot change meanwhile.
func (l *Log) swapCleaned(g []cleanable, tmpLog, tmpIdx, tmpTidx string) (bool, error) {
	l.deleteMu.Lock()
	defer l.deleteMu.Unlock()
	l.mu.RLock()
	closed, logStart := l.mu.closed, l.mu.logStart
	at := groupAt(l.mu.segs, g)
	l.mu.RUnlock()
	if closed {
		return false, ErrClosed
	}
	if at < 0 {
		return false, nil
	}
	base, next := g[0].s.base, g[len(g)-1].next
	if err := l.fs.Rename(tmpLog, join(l.dir, swapName(base, next))); err != nil {
		return false, l.ioErr(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return true, l.fail(err)
	}
	others := make([]int64, 0, len(g)-1)
	for _, c := range g[1:] {
		others = append(others, c.s.base)
	}
	if err := l.finishSwap(base, next, others); err != nil {
		return true, l.fail(err)
	}
	_, idxPath, tidxPath := l.segPaths(base)
	if err := l.fs.Rename(tmpIdx, idxPath); err != nil {
		return true, l.fail(err)
	}
	if err := l.fs.Rename(tmpTidx, tidxPath); err != nil {
		return true, l.fail(err)
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return true, l.fail(err)
	}
	ns, err := l.loadSegment(base, false, true, nil, &epochCache{}, false, logStart)
	if err != nil {
		return true, l.fail(err)
	}
	l.appendMu.Lock()
	l.mu.Lock()
	// A new list, as deleteFront makes: appends may have added segments
	// after the group since, never before it (deleteMu is held).
	at = slices.Index(l.mu.segs, g[0].s)
	segs := make([]*segment, 0, len(l.mu.segs)-len(g)+1)
	segs = append(append(append(segs, l.mu.segs[:at]...), ns), l.mu.segs[at+len(g):]...)
	l.mu.segs = segs
	l.mu.Unlock()
	l.appendMu.Unlock()
	for _, c := range g {
		c.s.closeFiles()
	}
	return true, nil
}

// finishSwap is step 2 of a committed swap of the segments based at base
// and others (their bases) to the new segment of offsets [base, next).
func (l *Log) finishSwap(base, next int64, others []int64) error {
	logPath, idxPath, tidxPath := l.segPaths(base)
	doomed := []string{idxPath, tidxPath}
	for _, b := range others {
		a, i, t := l.segPaths(b)
		doomed = append(doomed, i, t, a)
	}
	for _, p := range doomed {
		if err := l.fs.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	if err := l.fs.Rename(join(l.dir, swapName(base, next)), logPath); err != nil {
		return err
	}
	return l.fs.SyncDir(l.dir)
}

// finishSwaps finishes every committed swap among names (the directory's
// files; Open, before it lists the segments) and reports whether it found
// any.
func (l *Log) finishSwaps(names []string) (bool, error) {
	found := false
	for _, name := range names {
		base, next, ok := parseSwapName(name)
		if !ok {
			continue
		}
		var others []int64
		for _, n := range names {
			if b, ok := parseSegmentName(n); ok && b > base && b < next {
				others = append(others, b)
			}
		}
		l.logger.Warn("segment: finishing a compaction swap a crash interrupted",
			"dir", l.dir, "segment", segmentName(base), "next", next, "replaces", len(others)+1)
		if err := l.finishSwap(base, next, others); err != nil {
			return found, err
		}
		found = true
	}
	return found, nil
}
