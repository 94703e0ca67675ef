package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// diskStorage implements raft.Storage over the durable state in the metadata
// directory: the entry log (logStore), the hard state file and the snapshot
// files (fileStore). It also offers the write operations the Ready loop uses
// to persist a Ready.
//
// The raft log it exposes is [first, last] with the term of first-1 known:
//   - right after a snapshot at S was installed, the entry log starts at S+1
//     and first = S+1 (the term of S is the snapshot's);
//   - otherwise the entry log starts at some s <= S (s is kept only for its
//     term, like MemoryStorage's dummy entry) and first = s+1.
//
// Terms of [first-1, last] are kept in memory; the most recent entries are
// cached (up to cacheMax bytes), older ones are read back from the log.
//
// diskStorage is not safe for concurrent use: raft calls it from the Ready
// loop goroutine, which is also the only writer.
type diskStorage struct {
	log   logStore
	files fileStore
	lg    *slog.Logger

	hs       *pb.HardState // the latest hard state
	hsOnDisk *pb.HardState // the hard state in the file
	hsDirty  bool          // hs differs from hsOnDisk (in the commit index only, between Readys)
	snap     *pb.Snapshot  // the latest snapshot, never nil (index 0 = none)

	// Invariant: len(terms) >= 1; terms[i] is the term of index first-1+i;
	// last = first-2+len(terms); log.End() == last+1.
	first uint64
	terms []uint64

	// bootstrapEnd is the last index of the bootstrap entries found in the
	// log at Start (0 if none): the run from index 1 of conf changes in term
	// 1. Only RawNode.Bootstrap writes entries in term 1 (a campaign starts
	// term 2), and it commits them on every voter alike.
	bootstrapEnd uint64

	// Invariant: cache[i] is the entry at cacheStart+i; cacheStart+len(cache) == last+1.
	cache      []*pb.Entry
	cacheStart uint64
	cacheBytes uint64
	cacheMax   uint64
}

var _ raft.Storage = (*diskStorage)(nil)

// errDiskGap reports a metadata directory whose entry log does not connect to
// its newest usable snapshot.
var errDiskGap = errors.New("raftnode: metadata log does not connect to the snapshot")

// openStorage loads the snapshot, hard state and entry log and reconciles them
// after a crash (see the package doc, "Recovery").
func openStorage(ctx context.Context, log logStore, files fileStore, cacheMax uint64, lg *slog.Logger) (*diskStorage, error) {
	s := &diskStorage{log: log, files: files, lg: lg, cacheMax: cacheMax, snap: &pb.Snapshot{}}
	names, err := files.List()
	if err != nil {
		return nil, err
	}
	snaps := listSnapFiles(names)
	for _, sf := range snaps {
		snap, err := s.readSnapFile(sf)
		if err != nil {
			lg.Warn("raftnode: skipping unreadable snapshot", "file", sf.name, "err", err)
			continue
		}
		if s.connects(snap) {
			s.snap = snap
			break
		}
		lg.Warn("raftnode: snapshot does not connect to the log", "file", sf.name,
			"log_start", log.Start(), "log_end", log.End())
	}
	if len(snaps) > 0 && s.snap.GetMetadata().GetIndex() == 0 {
		return nil, fmt.Errorf("%w: no usable snapshot among %d (log [%d, %d))", errDiskGap, len(snaps), log.Start(), log.End())
	}
	if err := s.loadHardState(); err != nil {
		return nil, err
	}
	if err := s.loadLog(ctx); err != nil {
		return nil, err
	}
	s.fixHardState()
	return s, nil
}

func (s *diskStorage) readSnapFile(sf snapFile) (*pb.Snapshot, error) {
	b, err := s.files.ReadFile(sf.name)
	if err != nil {
		return nil, err
	}
	snap, err := decodeSnapFile(b)
	if err != nil {
		return nil, err
	}
	if snap.GetMetadata().GetIndex() != sf.index || snap.GetMetadata().GetTerm() != sf.term {
		return nil, fmt.Errorf("%w: %s holds snapshot %d/%d", ErrCorruptState, sf.name,
			snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm())
	}
	return snap, nil
}

// connects reports whether the entry log can follow snap: it starts at or
// before snap's index + 1 (entries wholly older than the snapshot are dropped
// by loadLog), or the snapshot is index 0.
func (s *diskStorage) connects(snap *pb.Snapshot) bool {
	idx := snap.GetMetadata().GetIndex()
	return s.log.Start() <= idx+1 || s.log.End() <= idx+1
}

func (s *diskStorage) loadHardState() error {
	b, err := s.files.ReadFile(hardStateFile)
	switch {
	case errors.Is(err, os.ErrNotExist):
		s.hs, s.hsOnDisk = &pb.HardState{}, &pb.HardState{}
		return nil
	case err != nil:
		return fmt.Errorf("raftnode: read hard state: %w", err)
	}
	s.hs, err = decodeHardState(b)
	s.hsOnDisk = s.hs
	return err
}

// loadLog makes the entry log consistent with the snapshot and loads the terms.
func (s *diskStorage) loadLog(ctx context.Context) error {
	si, st := s.snap.GetMetadata().GetIndex(), s.snap.GetMetadata().GetTerm()
	start, end := s.log.Start(), s.log.End()
	switch {
	case si == 0 && start != 1:
		return fmt.Errorf("%w: log starts at %d but there is no snapshot", errDiskGap, start)
	case si == 0:
		s.first, s.terms = 1, []uint64{0}
	case start == si+1:
		s.first, s.terms = si+1, []uint64{st}
	case end <= si || start > si+1:
		// The log is wholly older than the snapshot (a snapshot install that
		// crashed before the log reset): restart it after the snapshot.
		if err := s.log.Reset(ctx, si+1); err != nil {
			return err
		}
		s.first, s.terms = si+1, []uint64{st}
	default: // start <= si < end
		ents, err := s.log.Read(ctx, si, si+1, 0)
		if err != nil {
			return err
		}
		if len(ents) != 1 || ents[0].GetTerm() != st {
			s.lg.Warn("raftnode: log diverges from the snapshot; dropping it", "offset", si)
			if err := s.log.Reset(ctx, si+1); err != nil {
				return err
			}
			s.first, s.terms = si+1, []uint64{st}
		} else {
			s.first = start + 1
			s.terms = nil
		}
	}
	// Read the log once: every term, and the tail into the cache.
	lo := s.first
	if s.terms == nil {
		lo = s.first - 1 // the dummy entry, kept for its term
	}
	s.cacheStart = s.first
	for lo < s.log.End() {
		ents, err := s.log.Read(ctx, lo, s.log.End(), 4<<20)
		if err != nil {
			return err
		}
		if len(ents) == 0 {
			return fmt.Errorf("raftnode: read log at %d: no entries before %d", lo, s.log.End())
		}
		for _, e := range ents {
			if n := len(s.terms); n > 0 && e.GetTerm() < s.terms[n-1] {
				return fmt.Errorf("%w: entry %d has term %d after term %d", ErrCorruptState, e.GetIndex(), e.GetTerm(), s.terms[n-1])
			}
			s.terms = append(s.terms, e.GetTerm())
			if e.GetIndex() >= s.first {
				s.cacheAppend(e)
			}
			if e.GetIndex() == s.bootstrapEnd+1 && e.GetTerm() == 1 && e.GetType() == pb.EntryConfChange {
				s.bootstrapEnd++
			}
		}
		lo += uint64(len(ents))
	}
	return nil
}

// fixHardState makes the hard state agree with what survived a crash: the
// commit index is at least the snapshot index (a snapshot only holds committed
// state) and at most the last index (the commit index is only knowledge and
// may be re-learned); a term below the last entry's term is raised to it (the
// node had already seen that term; it had not voted in it, or the vote would
// have been persisted first). The bootstrap entries are committed too: a
// crash after they reached the log but before the hard state saying so did
// must not leave the node without a configuration (if every voter crashed
// there, none could ever campaign).
func (s *diskStorage) fixHardState() {
	term, vote, commit := s.hs.GetTerm(), s.hs.GetVote(), s.hs.GetCommit()
	if lt := s.terms[len(s.terms)-1]; lt > term {
		term, vote = lt, 0
	}
	commit = max(commit, s.snap.GetMetadata().GetIndex(), s.bootstrapEnd)
	commit = min(commit, s.lastIndex())
	if term != s.hs.GetTerm() || vote != s.hs.GetVote() || commit != s.hs.GetCommit() {
		s.lg.Info("raftnode: adjusted hard state after restart", "term", term, "vote", vote, "commit", commit)
		s.hs = &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
		s.hsDirty = true
	}
}

func (s *diskStorage) lastIndex() uint64 { return s.first - 2 + uint64(len(s.terms)) }

// InitialState implements raft.Storage.
func (s *diskStorage) InitialState() (*pb.HardState, *pb.ConfState, error) {
	cs := s.snap.GetMetadata().GetConfState()
	if cs == nil {
		cs = &pb.ConfState{}
	}
	return proto.Clone(s.hs).(*pb.HardState), proto.Clone(cs).(*pb.ConfState), nil
}

// Entries implements raft.Storage.
func (s *diskStorage) Entries(lo, hi, maxSize uint64) ([]*pb.Entry, error) {
	if lo < s.first {
		return nil, raft.ErrCompacted
	}
	if hi > s.lastIndex()+1 || lo > hi {
		return nil, raft.ErrUnavailable
	}
	if lo == hi {
		return nil, nil
	}
	var out []*pb.Entry
	var size uint64
	if lo < s.cacheStart {
		ents, err := s.log.Read(context.Background(), lo, min(hi, s.cacheStart), maxSize)
		if err != nil {
			s.lg.Error("raftnode: reading the metadata log", "err", err, "offset", lo)
			return nil, raft.ErrUnavailable
		}
		out = ents
		for _, e := range ents {
			size += uint64(proto.Size(e))
		}
		lo += uint64(len(ents))
		if lo < min(hi, s.cacheStart) || size >= maxSize {
			return limitEntries(out, maxSize), nil
		}
	}
	for i := lo; i < hi; i++ {
		e := s.cache[i-s.cacheStart]
		size += uint64(proto.Size(e))
		if len(out) > 0 && size > maxSize {
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// limitEntries returns the longest non-empty prefix of ents within maxSize.
func limitEntries(ents []*pb.Entry, maxSize uint64) []*pb.Entry {
	var size uint64
	for i, e := range ents {
		size += uint64(proto.Size(e))
		if i > 0 && size > maxSize {
			return ents[:i]
		}
	}
	return ents
}

// Term implements raft.Storage.
func (s *diskStorage) Term(i uint64) (uint64, error) {
	if i < s.first-1 {
		return 0, raft.ErrCompacted
	}
	if i > s.lastIndex() {
		return 0, raft.ErrUnavailable
	}
	return s.terms[i-(s.first-1)], nil
}

// LastIndex implements raft.Storage.
func (s *diskStorage) LastIndex() (uint64, error) { return s.lastIndex(), nil }

// FirstIndex implements raft.Storage.
func (s *diskStorage) FirstIndex() (uint64, error) { return s.first, nil }

// Snapshot implements raft.Storage.
func (s *diskStorage) Snapshot() (*pb.Snapshot, error) { return s.snap, nil }

// appliedIndex is where the state machine stands after restoring the snapshot.
func (s *diskStorage) snapshotIndex() uint64 { return s.snap.GetMetadata().GetIndex() }

// append writes ents (consecutive), first discarding any entries at or after
// ents[0]'s index: raft only rewrites uncommitted entries that conflict with
// the leader's. Not durable until sync.
func (s *diskStorage) append(ctx context.Context, ents []*pb.Entry) error {
	// Entries already stored with the same term are the same entries (raft's
	// log matching): skip them rather than truncate and rewrite. raft never
	// hands those out, but persisting a Ready again after a full disk
	// refused part of it does (diskfull.go), and a truncation needs room.
	for len(ents) > 0 {
		i := ents[0].GetIndex()
		if i < s.first || i > s.lastIndex() {
			break
		}
		if t, err := s.Term(i); err != nil || t != ents[0].GetTerm() {
			break
		}
		ents = ents[1:]
	}
	if len(ents) == 0 {
		return nil
	}
	f := ents[0].GetIndex()
	if f < s.first || f > s.lastIndex()+1 {
		panic(fmt.Sprintf("raftnode: appending entries from %d to log [%d, %d]", f, s.first, s.lastIndex()))
	}
	if f <= s.lastIndex() {
		if err := s.log.TruncateTo(ctx, f); err != nil {
			return err
		}
		s.terms = s.terms[:f-(s.first-1)]
		s.cacheTruncate(f)
	}
	for _, e := range ents {
		if e.GetIndex() != s.lastIndex()+1 {
			panic(fmt.Sprintf("raftnode: entry %d does not follow %d", e.GetIndex(), s.lastIndex()))
		}
		if err := s.log.Append(ctx, e); err != nil {
			return err
		}
		s.terms = append(s.terms, e.GetTerm())
		s.cacheAppend(e)
	}
	return nil
}

func (s *diskStorage) sync(ctx context.Context) error { return s.log.Sync(ctx) }

// setHardState records hs. A new term or vote is written at once (raft
// counts on it before any message leaves: Ready.MustSync is set); a change of
// the commit index alone stays in memory until the next term or vote change
// or Close, since the commit index is only knowledge that is re-learned from
// the leader after a crash (and recovery raises it to the snapshot index).
func (s *diskStorage) setHardState(hs *pb.HardState) error {
	if hs == nil || raft.IsEmptyHardState(hs) {
		return nil
	}
	s.hs = proto.Clone(hs).(*pb.HardState)
	s.hsDirty = true
	if hs.GetTerm() != s.hsOnDisk.GetTerm() || hs.GetVote() != s.hsOnDisk.GetVote() {
		return s.flushHardState()
	}
	return nil
}

func (s *diskStorage) flushHardState() error {
	if !s.hsDirty {
		return nil
	}
	if err := s.files.WriteFile(hardStateFile, encodeHardState(s.hs)); err != nil {
		return err
	}
	s.hsOnDisk = s.hs
	s.hsDirty = false
	return nil
}

// installSnapshot persists a snapshot received from the leader and restarts
// the entry log right after it (everything before is superseded, everything
// after may conflict with the leader and is re-sent).
func (s *diskStorage) installSnapshot(ctx context.Context, snap *pb.Snapshot) error {
	if err := s.writeSnapshot(snap); err != nil {
		return err
	}
	idx := snap.GetMetadata().GetIndex()
	if err := s.log.Reset(ctx, idx+1); err != nil {
		return err
	}
	s.snap = snap
	s.first, s.terms = idx+1, []uint64{snap.GetMetadata().GetTerm()}
	s.cache, s.cacheStart, s.cacheBytes = nil, idx+1, 0
	s.removeOldSnapshots(1)
	return nil
}

// createSnapshot records a snapshot of the state machine at index (applied,
// so committed) and returns it.
func (s *diskStorage) createSnapshot(index uint64, cs *pb.ConfState, data []byte) (*pb.Snapshot, error) {
	if index <= s.snapshotIndex() {
		return s.snap, nil
	}
	term, err := s.Term(index)
	if err != nil {
		return nil, fmt.Errorf("raftnode: snapshot at %d: %w", index, err)
	}
	snap := &pb.Snapshot{
		Metadata: &pb.SnapshotMetadata{ConfState: cs, Index: new(index), Term: new(term)},
		Data:     data,
	}
	if err := s.writeSnapshot(snap); err != nil {
		return nil, err
	}
	s.snap = snap
	s.removeOldSnapshots(2)
	return snap, nil
}

func (s *diskStorage) writeSnapshot(snap *pb.Snapshot) error {
	b, err := encodeSnapFile(snap)
	if err != nil {
		return err
	}
	return s.files.WriteFile(snapFileName(snap.GetMetadata().GetIndex(), snap.GetMetadata().GetTerm()), b)
}

// removeOldSnapshots keeps the newest keep snapshot files.
func (s *diskStorage) removeOldSnapshots(keep int) {
	names, err := s.files.List()
	if err != nil {
		s.lg.Warn("raftnode: listing snapshots", "err", err)
		return
	}
	for i, sf := range listSnapFiles(names) {
		if i >= keep {
			if err := s.files.Remove(sf.name); err != nil {
				s.lg.Warn("raftnode: removing old snapshot", "file", sf.name, "err", err)
			}
		}
	}
}

// compact drops the entries below first (raft's FirstIndex becomes first); the
// entry first-1 is kept in the log for its term. first must not pass the
// snapshot index + 1.
func (s *diskStorage) compact(ctx context.Context, first uint64) error {
	if first <= s.first {
		return nil
	}
	if first > s.snapshotIndex()+1 || first > s.lastIndex()+1 {
		panic(fmt.Sprintf("raftnode: compacting to %d past snapshot %d / last %d", first, s.snapshotIndex(), s.lastIndex()))
	}
	if err := s.log.DeleteBefore(ctx, first-1); err != nil {
		return err
	}
	s.terms = s.terms[first-s.first:]
	s.first = first
	if s.cacheStart < first {
		drop := first - s.cacheStart
		for _, e := range s.cache[:drop] {
			s.cacheBytes -= uint64(proto.Size(e))
		}
		s.cache = append([]*pb.Entry(nil), s.cache[drop:]...)
		s.cacheStart = first
	}
	return nil
}

func (s *diskStorage) cacheAppend(e *pb.Entry) {
	s.cache = append(s.cache, e)
	s.cacheBytes += uint64(proto.Size(e))
	drop := 0
	for s.cacheBytes > s.cacheMax && drop < len(s.cache)-1 {
		s.cacheBytes -= uint64(proto.Size(s.cache[drop]))
		drop++
	}
	if drop > 0 {
		// Copy so the dropped entries can be collected.
		s.cache = append([]*pb.Entry(nil), s.cache[drop:]...)
		s.cacheStart += uint64(drop)
	}
}

// cacheTruncate drops cached entries at and after index.
func (s *diskStorage) cacheTruncate(index uint64) {
	if index < s.cacheStart {
		s.cache, s.cacheBytes, s.cacheStart = nil, 0, index
		return
	}
	for _, e := range s.cache[index-s.cacheStart:] {
		s.cacheBytes -= uint64(proto.Size(e))
	}
	s.cache = s.cache[:index-s.cacheStart]
}

// close writes a pending hard state and closes the log.
func (s *diskStorage) close() error {
	err := s.flushHardState()
	if cerr := s.log.Close(); err == nil {
		err = cerr
	}
	return err
}
