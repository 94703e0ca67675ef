package raftnode

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"paymentlog/segment"
)

// ErrScrubOnlyVoter is returned by Start when a scrub found the metadata
// log corrupt and this node is its only voter: no other node holds the
// committed entries the repair would truncate.
var ErrScrubOnlyVoter = errors.New("raftnode: a scrub found the metadata log corrupt and this node is its only voter")

// prepareScrubRepair runs at Start before the entry log is opened: if a
// scrub marked the log for repair (scrub.go), the open truncates it at the
// corrupt entry, taking out entries this node may have acknowledged (and
// so counted in a majority that committed them). Before that it
//
//  1. copies the log's segments from the marked one on into the repair's
//     quarantine (segment.ScrubQuarantinePrefix + the marked base, in the
//     metadata directory: the directory segment's own repair of a sealed
//     segment uses, and finds the copy already made); nothing the repair
//     takes out is destroyed;
//  2. refuses to start a single voter (ErrScrubOnlyVoter, naming the
//     quarantine and the mark): its committed entries have no other copy,
//     and a start would silently lose them. The mark stays, so every start
//     refuses until the operator salvages what they can and removes it;
//  3. puts a voter of several under the rejoin guard (guard.go), whatever
//     Config.RejoinGuard says: the marker is written, durably, with a new
//     nonce (no first-start witness can vouch for it), before the log is
//     truncated, and the node then grants no vote and does not
//     campaign until it has caught up to the target its caller learns from
//     the other voters (CatchUpTo), exactly as a voter whose log was lost.
//     A learner only refetches.
//
// The guard is set even if the re-check finds the segment sound after all
// (damage in memory): telling that apart needs the log end before the
// open, and a needless catch-up is cheap.
func prepareScrubRepair(cfg Config, files fileStore) error {
	fsys := cfg.FS
	if fsys == nil {
		fsys = segment.OSFS{}
	}
	base, marked, err := segment.ScrubMarked(fsys, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
	if !marked {
		return nil
	}
	q := filepath.Join(cfg.DataDir, fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, base))
	copied, err := setAsideSegments(fsys, cfg.DataDir, q, base, time.Now())
	if err != nil {
		return fmt.Errorf("raftnode: setting the metadata log aside before its repair: %w", err)
	}
	lg := cfg.Logger
	_, voter := cfg.Voters[cfg.ID]
	if voter && len(cfg.Voters) < 2 {
		// The sweep (scrub_quarantine.go) never removes this one.
		if err := segment.WriteCheckpoint(fsys, filepath.Join(q, soleCopyFile), []byte("the only voter's: the operator's to salvage and remove\n")); err != nil {
			return fmt.Errorf("raftnode: setting the metadata log aside before its repair: %w", err)
		}
		return fmt.Errorf("%w: refusing to start rather than lose committed metadata; its segments from offset %d are in %s (salvage them with paymentlog log dump); to start anyway with the log truncated at the corrupt entry, remove %s",
			ErrScrubOnlyVoter, base, q, segment.ScrubMarkPath(cfg.DataDir))
	}
	lg.Warn("raftnode: a scrub found the metadata log corrupt; set its segments aside, and the open truncates it at the corrupt entry",
		"segment", base, "quarantine", q, "copied_files", copied)
	if !voter {
		return nil
	}
	// A fresh nonce even if the node is guarded already: a first-start
	// witness may vouch for the old one (guard.go's LiftGuard), which named
	// storage that held everything the node acknowledged; this one no
	// longer does.
	nonce := newGuardNonce()
	if err := files.WriteFile(rejoinGuardFile, []byte(nonce)); err != nil {
		return fmt.Errorf("raftnode: rejoin guard: %w", err)
	}
	lg.Warn("raftnode: the metadata log's repair takes out entries this voter may have acknowledged; it will not vote until it has caught up (rejoin guard)",
		"nonce", nonce)
	return nil
}

// setAsideSegments copies the .log files of dir's segments at and after
// base into q (made if absent), skipping those already there, and syncs
// them; q records first when it was set aside (segment.WriteSetAsideAt:
// the sweep's retention counts from then). It returns how many it copied.
func setAsideSegments(fsys segment.FS, dir, q string, base int64, now time.Time) (int, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	if err := fsys.MkdirAll(q, 0o755); err != nil {
		return 0, err
	}
	if err := segment.WriteSetAsideAt(fsys, q, now); err != nil {
		return 0, err
	}
	have, err := fsys.ReadDir(q)
	if err != nil {
		return 0, err
	}
	copied := 0
	for _, name := range names {
		digits, ok := strings.CutSuffix(name, ".log")
		if !ok || len(digits) != 20 {
			continue
		}
		b, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || b < base || slices.Contains(have, name) {
			continue
		}
		if err := segment.CopyFile(fsys, filepath.Join(dir, name), filepath.Join(q, name+".partial")); err != nil {
			return copied, fmt.Errorf("copy %s: %w", name, err)
		}
		if err := fsys.Rename(filepath.Join(q, name+".partial"), filepath.Join(q, name)); err != nil {
			return copied, err
		}
		copied++
	}
	if err := fsys.SyncDir(q); err != nil {
		return copied, err
	}
	return copied, fsys.SyncDir(dir)
}
