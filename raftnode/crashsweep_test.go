package raftnode

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	pb "go.etcd.io/raft/v3/raftpb"

	"paymentlog/segment"
)

// TestStorageCrashAtEveryOp runs a workload over the segment log on a MemFS —
// appends across several segments, a conflict that truncates back into an
// older segment, hard states, a snapshot and compaction, a snapshot install
// from a leader — and simulates a power cut before each of its file-system
// operations in turn. Every crash image must open, keep every committed entry
// (by the hard state or snapshot that was durable), hold only entries that
// were written at their index, and keep commit within the log.
func TestStorageCrashAtEveryOp(t *testing.T) {
	requireSegment(t)
	pad := bytes.Repeat([]byte{'x'}, 1200) // ~50 entries per 64 KiB segment
	mk := func(i, term uint64) *pb.Entry {
		return &pb.Entry{Type: pb.EntryNormal.Enum(), Index: new(i), Term: new(term),
			Data: append(encodeEnvelope(proposalID{node: term, seq: i}, []byte(fmt.Sprintf("e%d-%d/", i, term))), pad...)}
	}
	span := func(from, to, term uint64) []*pb.Entry {
		var out []*pb.Entry
		for i := from; i <= to; i++ {
			out = append(out, mk(i, term))
		}
		return out
	}
	hs := func(term, vote, commit uint64) *pb.HardState {
		return &pb.HardState{Term: new(term), Vote: new(vote), Commit: new(commit)}
	}
	cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
	installed := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: new(uint64(300)), Term: new(uint64(4)), ConfState: cs},
		Data: []byte("leader image")}

	// committed[i] is the entry committed at i; written[i] every entry ever written there.
	committed := map[uint64]*pb.Entry{}
	written := map[uint64][]*pb.Entry{}
	workload := func(s *diskStorage, note func(string)) error {
		ctx := context.Background()
		step := func(name string, ents []*pb.Entry, h *pb.HardState) error {
			note(name)
			for _, e := range ents {
				written[e.GetIndex()] = append(written[e.GetIndex()], e)
			}
			if err := s.append(ctx, ents); err != nil {
				return err
			}
			if err := s.sync(ctx); err != nil {
				return err
			}
			if h != nil {
				return s.setHardState(h)
			}
			return nil
		}
		if err := step("append 1-120 (term 1)", span(1, 120, 1), hs(1, 1, 90)); err != nil {
			return err
		}
		// A new leader overwrites 91.. : back into the second segment.
		if err := step("conflict at 91 (term 2)", span(91, 100, 2), hs(2, 0, 95)); err != nil {
			return err
		}
		if err := step("append 101-160 (term 2)", span(101, 160, 2), hs(3, 2, 150)); err != nil {
			return err
		}
		note("snapshot at 150")
		if _, err := s.createSnapshot(150, cs, []byte("image@150")); err != nil {
			return err
		}
		note("compact to 141")
		if err := s.compact(ctx, 141); err != nil {
			return err
		}
		note("install snapshot 300")
		if err := s.installSnapshot(ctx, installed); err != nil {
			return err
		}
		if err := step("append 301-320 (term 4)", span(301, 320, 4), hs(4, 0, 310)); err != nil {
			return err
		}
		return s.close()
	}
	// The committed entries, as the workload leaves them.
	for i := uint64(1); i <= 90; i++ {
		committed[i] = mk(i, 1)
	}
	for i := uint64(91); i <= 150; i++ {
		committed[i] = mk(i, 2)
	}
	for i := uint64(301); i <= 310; i++ {
		committed[i] = mk(i, 4)
	}

	// A dry run counts the operations.
	const dir = "/data/__cluster_metadata-0"
	mustOpen := func(fs segment.FS) *diskStorage {
		s, err := openSmall(t, fs, dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	dry := segment.NewMemFS()
	var phases []string // phase of each operation
	phase := ""
	dry.SetFault(func(segment.FaultOp, string) error { phases = append(phases, phase); return nil })
	if err := workload(mustOpen(dry), func(s string) { phase = s }); err != nil {
		t.Fatal(err)
	}
	// Every operation, except one in 8 of the plain appends (they repeat).
	var points []int
	for k := 1; k <= len(phases); k++ {
		if p := phases[k-1]; k%8 == 0 || !strings.HasPrefix(p, "append ") {
			points = append(points, k)
		}
	}
	t.Logf("%d file-system operations, crashing before %d of them", len(phases), len(points))

	for _, k := range points {
		written = map[uint64][]*pb.Entry{}
		mfs := segment.NewMemFS()
		var image *segment.MemFS
		var at, phase string
		n := 0
		mfs.SetFault(func(op segment.FaultOp, path string) error {
			if n++; n == k {
				image, at = mfs.CrashClone(), fmt.Sprintf("%s %s during %q", op, path, phase)
			}
			return nil
		})
		if err := workload(mustOpen(mfs), func(s string) { phase = s }); err != nil {
			t.Fatal(err)
		}
		if image == nil {
			t.Fatalf("op %d not reached", k)
		}
		// What must have survived: the durable hard state's commit and the
		// durable snapshot say what is committed.
		s, err := openSmall(t, image, dir)
		if err != nil {
			t.Fatalf("crash before op %d (%s): open: %v", k, at, err)
		}
		h, _, _ := s.InitialState()
		first, last := s.first, s.lastIndex()
		if h.GetCommit() > last || h.GetCommit() < s.snapshotIndex() {
			t.Fatalf("crash before op %d (%s): commit %d outside [snapshot %d, last %d]", k, at, h.GetCommit(), s.snapshotIndex(), last)
		}
		var durableCommit uint64
		if b, err := newDirFiles(image, dir).ReadFile(hardStateFile); err == nil {
			if dh, err := decodeHardState(b); err == nil {
				durableCommit = dh.GetCommit()
			}
		}
		durableCommit = max(durableCommit, s.snapshotIndex())
		if last < durableCommit {
			t.Fatalf("crash before op %d (%s): log ends at %d, committed %d", k, at, last, durableCommit)
		}
		if first <= last {
			got, err := s.Entries(first, last+1, 1<<40)
			if err != nil {
				t.Fatalf("crash before op %d (%s): entries [%d, %d]: %v", k, at, first, last, err)
			}
			for _, e := range got {
				i := e.GetIndex()
				if c := committed[i]; i <= durableCommit && c != nil && !entryEqual(e, c) {
					t.Fatalf("crash before op %d (%s): committed entry %d is now %d/%q", k, at, i, e.GetTerm(), e.GetData()[:16])
				}
				ok := false
				for _, w := range written[i] {
					ok = ok || entryEqual(e, w)
				}
				if !ok {
					t.Fatalf("crash before op %d (%s): entry %d (term %d) was never written there", k, at, i, e.GetTerm())
				}
			}
		}
		_ = s.close()
	}
}

// openSmall opens storage on fs with 64 KiB segments.
func openSmall(tb testing.TB, fs segment.FS, dir string) (*diskStorage, error) {
	cfg := Config{SegmentBytes: 64 << 10, FS: fs}.withDefaults()
	cfg.Logger = testLogger(tb)
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	sl, err := openSegmentLog(context.Background(), dir, &cfg)
	if err != nil {
		return nil, err
	}
	return openStorage(context.Background(), sl, newDirFiles(fs, dir), 256, testLogger(tb))
}

func entryEqual(a, b *pb.Entry) bool {
	return a.GetIndex() == b.GetIndex() && a.GetTerm() == b.GetTerm() && a.GetType() == b.GetType() && bytes.Equal(a.GetData(), b.GetData())
}
