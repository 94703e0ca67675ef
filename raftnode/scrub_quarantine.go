package raftnode

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/segment"
)

// The metadata log's scrub quarantines (scrub_repair.go: the segments a
// repair set aside, from the corrupt one on) are removed by
// SweepScrubQuarantines once provably redundant, as the broker's sweep
// removes a partition's (node/broker's quarantine_sweep.go), on the same
// retention. A quarantine goes only when all of these hold
// (quarantineVerdict):
//
//  1. automatic removal is on: the retention is above 0;
//  2. it was set aside at least that long ago (segment.WriteSetAsideAt,
//     written by the repair; one without that time counts from the first
//     sweep that finds it);
//  3. it is not the one a single voter's refused start set aside
//     (soleCopyFile): that one is the operator's, always;
//  4. the raft indexes it holds are known (segment.Log.QuarantineRange: a
//     raft index is its entry's offset), or bounded: when its newest file
//     holding entries is the copy of the rotten one, the entries after the
//     bad one are at most one per segment.HeaderSize bytes up to the
//     file's last non-zero byte, at consecutive indexes (entriesBound). An
//     unreadable file stays;
//  5. this node is not the metadata group's only voter: then the quarantine
//     may be the only copy of entries it committed alone;
//  6. the node is not under the rejoin guard (guard.go): it has caught up
//     to the target the other voters gave it;
//  7. its applied index is past the quarantine's last index (or that
//     bound): the entries
//     the repair took out are in its log again, or in the snapshot that
//     covers them, as committed by a majority. What the quarantine held
//     beyond that was never committed and a new leader overwrote it.
//
// Each removal is logged (directory, indexes, bytes) and counted
// (ScrubStats.QuarantinesRemoved); a quarantine past its retention that
// stays is logged once per reason.

// soleCopyFile, in a metadata quarantine, says that a single voter's
// refused start set it aside: the sweep never removes it.
const soleCopyFile = "sole-copy"

// quarantineSweep is the node's sweep state.
type quarantineSweep struct {
	removed atomic.Uint64
	mu      struct {
		sync.Mutex // serialises sweeps
		// seen remembers each quarantine's range (read once: it does not
		// change) and the last reason it stayed, logged.
		seen map[string]*quarantineMemo
	}
}

// quarantineMemo is what the sweep remembers of a quarantine.
type quarantineMemo struct {
	rng    segment.QuarantineRange
	bound  int64 // entriesBound, with rng.Unknown set
	logged string
}

// quarantineFacts is what decides a metadata quarantine's removal.
type quarantineFacts struct {
	retention time.Duration // 0: never remove
	age       time.Duration // since it was set aside
	soleCopy  bool          // a single voter's refused start set it aside
	rng       segment.QuarantineRange
	bound     int64 // with rng.Unknown: the last index it may hold (-1: none known)
	voter     bool  // this node is a voter
	voters    int   // the metadata group's voters
	guarded   bool  // under the rejoin guard
	applied   uint64
}

// quarantineVerdict says whether a metadata quarantine goes (the file's top
// comment), and why not when it stays ("" when it goes).
func quarantineVerdict(f quarantineFacts) (remove bool, why string) {
	switch {
	case f.retention <= 0:
		return false, "automatic removal is off (retention 0)"
	case f.age < f.retention:
		return false, fmt.Sprintf("set aside %s ago, retention %s", f.age.Round(time.Second), f.retention)
	case f.soleCopy:
		return false, "set aside by the only voter's refused start: the operator's to salvage and remove"
	case f.rng.Unknown != "" && f.bound < 0:
		return false, "the raft indexes it holds cannot be told: " + f.rng.Unknown
	case f.voter && f.voters < 2:
		return false, "this node is the metadata group's only voter: this may be the only copy"
	case f.guarded:
		return false, "the node has not caught up yet (rejoin guard)"
	}
	last := f.rng.LastOffset
	if f.rng.Unknown != "" {
		last = f.bound
	}
	if last >= 0 && f.applied <= uint64(last) {
		return false, fmt.Sprintf("not applied again yet: applied index %d, the quarantine holds up to index %d", f.applied, last)
	}
	return true, ""
}

// entriesBound bounds the last raft index the quarantine in dir may hold
// when its range is unknown (rng.Unknown) because of a corrupt batch in its
// newest file holding entries: each entry is a batch of its own, of at
// least segment.HeaderSize bytes, beginning with its non-zero length, at
// consecutive indexes from rng.UnknownNext; the last one begins at or
// before the file's last non-zero byte. -1 when it cannot be told (an
// unreadable file).
func entriesBound(fsys segment.FS, dir string, rng segment.QuarantineRange) int64 {
	if rng.UnknownFile == "" {
		return -1
	}
	f, err := fsys.OpenFile(filepath.Join(dir, rng.UnknownFile), os.O_RDONLY, 0)
	if err != nil {
		return -1
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil || size < rng.UnknownAt {
		return -1
	}
	tail := make([]byte, size-rng.UnknownAt)
	if _, err := f.ReadAt(tail, rng.UnknownAt); err != nil && !errors.Is(err, io.EOF) {
		return -1
	}
	end := len(tail) - 1
	for end >= 0 && tail[end] == 0 {
		end--
	}
	if end < 0 {
		return rng.UnknownNext - 1
	}
	return rng.UnknownNext + int64(end/segment.HeaderSize)
}

// RemovedQuarantine is a metadata quarantine SweepScrubQuarantines removed.
type RemovedQuarantine struct {
	Dir        string
	Range      segment.QuarantineRange // raft indexes
	Bytes      int64
	SetAsideAt time.Time
	Applied    uint64 // the node's applied index then
}

// SweepScrubQuarantines removes the metadata log's redundant scrub
// quarantines (the file's top comment) as of now, kept retention (0 or
// less: never), logs and counts each, and returns them. It runs off the
// Ready loop and is safe to call at any time; concurrent calls are
// serialised. After Close it returns ErrStopped.
func (n *Node) SweepScrubQuarantines(now time.Time, retention time.Duration) ([]RemovedQuarantine, error) {
	sl, ok := n.st.log.(*segmentLog)
	if !ok || retention <= 0 {
		return nil, nil
	}
	q := &n.scrub.sweep
	q.mu.Lock()
	defer q.mu.Unlock()
	select {
	case <-n.donec:
		return nil, n.stoppedErr()
	default:
	}
	qs, err := sl.log.Quarantines(now)
	if err != nil || len(qs) == 0 {
		return nil, err
	}
	if q.mu.seen == nil {
		q.mu.seen = map[string]*quarantineMemo{}
	}
	fsys := n.cfg.FS
	if fsys == nil {
		fsys = segment.OSFS{}
	}
	var removed []RemovedQuarantine
	for _, qt := range qs {
		dir := filepath.Join(n.cfg.DataDir, qt.Name)
		f := quarantineFacts{retention: retention, age: now.Sub(qt.SetAsideAt)}
		if f.age < retention {
			continue // no need to read it yet
		}
		m := q.mu.seen[qt.Name]
		if m == nil {
			rng, err := sl.log.QuarantineRange(qt.Name)
			if err != nil {
				return removed, err
			}
			m = &quarantineMemo{rng: rng, bound: -1}
			if rng.Unknown != "" {
				m.bound = entriesBound(fsys, dir, rng)
			}
			q.mu.seen[qt.Name] = m
		}
		f.rng, f.bound = m.rng, m.bound
		if c, err := fsys.OpenFile(filepath.Join(dir, soleCopyFile), os.O_RDONLY, 0); err == nil {
			c.Close()
			f.soleCopy = true
		} else if !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("raftnode: scrub quarantine %s: %w", qt.Name, err)
		}
		st := n.Status()
		f.voters, f.guarded, f.applied = len(st.Voters), st.VoteGuarded, st.Applied
		for _, v := range st.Voters {
			f.voter = f.voter || v == n.id
		}
		if ok, why := quarantineVerdict(f); !ok {
			if why != m.logged {
				m.logged = why
				n.lg.Info("raftnode: keeping a metadata log scrub quarantine past its retention", "dir", dir, "reason", why,
					"first_index", m.rng.FirstOffset, "last_index", m.rng.LastOffset, "last_index_bound", m.bound, "bytes", qt.Bytes)
			}
			continue
		}
		if err := sl.log.RemoveQuarantine(qt.Name); err != nil {
			return removed, err
		}
		delete(q.mu.seen, qt.Name)
		q.removed.Add(1)
		removed = append(removed, RemovedQuarantine{Dir: dir, Range: m.rng, Bytes: qt.Bytes, SetAsideAt: qt.SetAsideAt, Applied: f.applied})
		n.lg.Info("raftnode: removed a metadata log scrub quarantine: the node has caught up and applied past its entries",
			"dir", dir, "first_index", m.rng.FirstOffset, "last_index", m.rng.LastOffset, "last_index_bound", m.bound, "bytes", qt.Bytes,
			"set_aside", qt.SetAsideAt, "applied", f.applied)
	}
	return removed, nil
}
