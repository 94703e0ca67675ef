package raftnode

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
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
//  3. puts a node that may vote under the rejoin guard (guard.go), whatever
//     Config.RejoinGuard says: the marker is written, durably, with a new
//     nonce (no first-start witness can vouch for it), before the log is
//     truncated, and the node then grants no vote and does not
//     campaign until it has caught up to the target its caller learns from
//     the other voters (CatchUpTo), exactly as a voter whose log was lost.
//     A node may vote if it is listed in Config.Voters, or was a voter when
//     the scrub stopped it (scrubLogEndFile: a voter left out of the list
//     is still one, doc.go), or that is not known. A learner never votes
//     (raft counts no learner's vote, and the voters are fixed): it only
//     refetches, unguarded.
//
// After the open, settle decides whether the repair took anything out.
// It returns nil when there is nothing to repair.
func prepareScrubRepair(cfg Config, files fileStore) (*scrubRepair, error) {
	fsys := cfg.FS
	if fsys == nil {
		fsys = segment.OSFS{}
	}
	base, marked, err := segment.ScrubMarked(fsys, cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("raftnode: %w", err)
	}
	end, known, present, err := readScrubLogEnd(files)
	if err != nil {
		return nil, err
	}
	if !marked {
		if present { // a crash between the repair's open and settle: stale
			return nil, removeScrubLogEnd(files)
		}
		return nil, nil
	}
	r := &scrubRepair{name: fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, base), end: end, known: known}
	q := filepath.Join(cfg.DataDir, r.name)
	_, statErr := fsys.ReadDir(q)
	r.madeQuarantine = errors.Is(statErr, os.ErrNotExist)
	copied, err := setAsideSegments(fsys, cfg.DataDir, q, base, time.Now())
	if err != nil {
		return nil, fmt.Errorf("raftnode: setting the metadata log aside before its repair: %w", err)
	}
	lg := cfg.Logger
	_, listed := cfg.Voters[cfg.ID]
	if listed && len(cfg.Voters) < 2 {
		// The sweep (scrub_quarantine.go) never removes this one.
		if err := segment.WriteCheckpoint(fsys, filepath.Join(q, soleCopyFile), []byte("the only voter's: the operator's to salvage and remove\n")); err != nil {
			return nil, fmt.Errorf("raftnode: setting the metadata log aside before its repair: %w", err)
		}
		return nil, fmt.Errorf("%w: refusing to start rather than lose committed metadata; its segments from offset %d are in %s (salvage them with paymentlog log dump); to start anyway with the log truncated at the corrupt entry, remove %s",
			ErrScrubOnlyVoter, base, q, segment.ScrubMarkPath(cfg.DataDir))
	}
	lg.Warn("raftnode: a scrub found the metadata log corrupt; set its segments aside, and the open truncates it at the corrupt entry",
		"segment", base, "quarantine", q, "copied_files", copied)
	if !listed && known && !end.voter {
		return r, nil
	}
	// A fresh nonce even if the node is guarded already: a first-start
	// witness may vouch for the old one (guard.go's LiftGuard), which named
	// storage that held everything the node acknowledged; this one may no
	// longer (settle puts the old one back if it still does).
	old, err := files.ReadFile(rejoinGuardFile)
	switch {
	case err == nil:
		r.oldGuard = old
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("raftnode: rejoin guard: %w", err)
	}
	nonce := newGuardNonce()
	if err := files.WriteFile(rejoinGuardFile, []byte(nonce)); err != nil {
		return nil, fmt.Errorf("raftnode: rejoin guard: %w", err)
	}
	r.guarded = true
	lg.Warn("raftnode: the metadata log's repair may take out entries this voter acknowledged; it will not vote until it has caught up (rejoin guard)",
		"nonce", nonce)
	return r, nil
}

// scrubRepair is what prepareScrubRepair did, for settle.
type scrubRepair struct {
	name           string      // the quarantine's directory name
	madeQuarantine bool        // this repair made it (it was absent)
	end            scrubLogEnd // the log's end when the scrub stopped the node
	known          bool        // end was recorded
	guarded        bool        // the rejoin guard's marker was written
	oldGuard       []byte      // the marker it replaced (nil: none)
}

// settle runs after the open repaired the log (st, sl) and before the node
// starts: it removes scrubLogEndFile and, when the repair took out nothing
// the node acknowledged (scrub_sound.go), undoes the guard, and the copy
// too if the log holds every entry it held.
func (r *scrubRepair) settle(st *diskStorage, sl *segmentLog, lg *slog.Logger) error {
	if err := removeScrubLogEnd(st.files); err != nil {
		return err
	}
	if !r.lostNothing(st) {
		return nil
	}
	if r.guarded {
		var err error
		if r.oldGuard != nil {
			err = st.files.WriteFile(rejoinGuardFile, r.oldGuard)
		} else {
			err = st.files.Remove(rejoinGuardFile)
		}
		if err != nil {
			return fmt.Errorf("raftnode: rejoin guard: %w", err)
		}
	}
	whole := r.keptWhole(st, sl)
	if whole && r.madeQuarantine {
		if err := sl.log.RemoveQuarantine(r.name); err != nil {
			lg.Warn("raftnode: could not remove the copy of a metadata log kept whole; the sweep removes it", "quarantine", r.name, "err", err)
		}
	}
	lg.Warn("raftnode: the metadata log's repair took out nothing this node acknowledged: its log still ends at the entry it ended at when the scrub stopped it (the damage was in memory, a read error, or below the snapshot); the node votes as before",
		"last_index", r.end.index, "epoch", r.end.term, "kept_whole", whole, "still_guarded", r.oldGuard != nil)
	return nil
}

// removeScrubLogEnd removes scrubLogEndFile. Start fails if it cannot: a
// stale one must never stand for a later scrub's.
func removeScrubLogEnd(files fileStore) error {
	if err := files.Remove(scrubLogEndFile); err != nil {
		return fmt.Errorf("raftnode: %w", err)
	}
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
