package raftnode

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.etcd.io/raft/v3"
	pb "go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"paymentlog/segment"
)

// testDisk is one node's durable state for storage tests: the in-memory
// pair (memLog, memFiles), or a segment log in dir on fs (a segment.MemFS,
// which can simulate a crash, or the OS).
type testDisk struct {
	tb    testing.TB
	dir   string // "" for memLog/memFiles
	fs    segment.FS
	log   *memLog
	files *memFiles
}

// diskKinds runs fn against the in-memory log, the segment log on a MemFS
// and the segment log on the real file system.
func diskKinds(t *testing.T, fn func(t *testing.T, d *testDisk)) {
	t.Run("mem", func(t *testing.T) {
		fn(t, &testDisk{tb: t, log: newMemLog(), files: newMemFiles()})
	})
	t.Run("segment-memfs", func(t *testing.T) {
		requireSegment(t)
		fn(t, &testDisk{tb: t, dir: "/data/__cluster_metadata-0", fs: segment.NewMemFS()})
	})
	t.Run("segment-os", func(t *testing.T) {
		requireSegment(t)
		fn(t, &testDisk{tb: t, dir: t.TempDir(), fs: segment.OSFS{}})
	})
}

// requireSegment skips t while package segment is still a stub.
func requireSegment(t testing.TB) {
	t.Helper()
	ok := func() (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
		cfg := Config{SegmentBytes: 1 << 20, NoSync: true, FS: segment.NewMemFS()}.withDefaults()
		cfg.Logger = testLogger(t)
		l, err := openSegmentLog(context.Background(), "/probe", &cfg)
		if err != nil {
			return false
		}
		_ = l.Close()
		return true
	}()
	if !ok {
		t.Skip("package segment is not implemented yet")
	}
}

func (d *testDisk) openStorage() (*diskStorage, error) {
	d.tb.Helper()
	var l logStore = d.log
	var f fileStore = d.files
	if d.dir != "" {
		cfg := Config{SegmentBytes: 1 << 20, FS: d.fs}.withDefaults()
		cfg.Logger = testLogger(d.tb)
		if err := d.fs.MkdirAll(d.dir, 0o755); err != nil {
			return nil, err
		}
		sl, err := openSegmentLog(context.Background(), d.dir, &cfg)
		if err != nil {
			return nil, err
		}
		l, f = sl, newDirFiles(d.fs, d.dir)
	}
	return openStorage(context.Background(), l, f, 256, testLogger(d.tb))
}

// crash returns the disk as a power cut would leave it (memory kinds only).
func (d *testDisk) crash() *testDisk {
	c := *d
	switch {
	case d.dir == "":
		c.log, c.files = d.log.crash(), d.files.clone()
	default:
		mfs, ok := d.fs.(*segment.MemFS)
		if !ok {
			d.tb.Fatalf("crash on a real file system")
		}
		c.fs = mfs.CrashClone()
	}
	return &c
}

func (d *testDisk) mustOpen() *diskStorage {
	d.tb.Helper()
	s, err := d.openStorage()
	if err != nil {
		d.tb.Fatalf("open storage: %v", err)
	}
	return s
}

// reopen closes s cleanly and opens the storage again.
func (d *testDisk) reopen(s *diskStorage) *diskStorage {
	d.tb.Helper()
	if err := s.close(); err != nil {
		d.tb.Fatalf("close: %v", err)
	}
	return d.mustOpen()
}

func ent(index, term uint64, data string) *pb.Entry {
	var b []byte
	if data != "" {
		b = encodeEnvelope(proposalID{node: 1, seq: index}, []byte(data))
	}
	return &pb.Entry{Type: pb.EntryNormal.Enum(), Index: new(index), Term: new(term), Data: b}
}

func ents(from, to, term uint64, prefix string) []*pb.Entry {
	var out []*pb.Entry
	for i := from; i <= to; i++ {
		out = append(out, ent(i, term, fmt.Sprintf("%s%d", prefix, i)))
	}
	return out
}

func mustAppend(tb testing.TB, s *diskStorage, es []*pb.Entry) {
	tb.Helper()
	if err := s.append(context.Background(), es); err != nil {
		tb.Fatalf("append: %v", err)
	}
	if err := s.sync(context.Background()); err != nil {
		tb.Fatalf("sync: %v", err)
	}
}

// checkLog verifies first/last and that every entry in range reads back
// with the expected term and data (prefix+index).
func checkLog(tb testing.TB, s *diskStorage, first, last uint64, term func(i uint64) uint64, prefix func(i uint64) string) {
	tb.Helper()
	if f, _ := s.FirstIndex(); f != first {
		tb.Fatalf("FirstIndex = %d, want %d", f, first)
	}
	if l, _ := s.LastIndex(); l != last {
		tb.Fatalf("LastIndex = %d, want %d", l, last)
	}
	if last < first {
		return
	}
	got, err := s.Entries(first, last+1, 1<<30)
	if err != nil {
		tb.Fatalf("Entries(%d, %d): %v", first, last+1, err)
	}
	if uint64(len(got)) != last-first+1 {
		tb.Fatalf("Entries returned %d entries, want %d", len(got), last-first+1)
	}
	for k, e := range got {
		i := first + uint64(k)
		_, payload, err := decodeEnvelope(e.GetData())
		if e.GetIndex() != i || e.GetTerm() != term(i) || err != nil || string(payload) != fmt.Sprintf("%s%d", prefix(i), i) {
			tb.Fatalf("entry %d = %d/%d %q (%v), want term %d %q", i, e.GetIndex(), e.GetTerm(), payload, err, term(i), prefix(i))
		}
		if t, err := s.Term(i); err != nil || t != term(i) {
			tb.Fatalf("Term(%d) = %d, %v", i, t, err)
		}
	}
}

func constTerm(t uint64) func(uint64) uint64 { return func(uint64) uint64 { return t } }
func constStr(p string) func(uint64) string  { return func(uint64) string { return p } }

func TestStorageAppendReadReopen(t *testing.T) {
	diskKinds(t, func(t *testing.T, d *testDisk) {
		s := d.mustOpen()
		checkLog(t, s, 1, 0, nil, nil)
		if tm, err := s.Term(0); err != nil || tm != 0 {
			t.Fatalf("Term(0) = %d, %v", tm, err)
		}
		mustAppend(t, s, ents(1, 50, 1, "e"))
		mustAppend(t, s, ents(51, 100, 2, "e"))
		term := func(i uint64) uint64 { return map[bool]uint64{true: 1, false: 2}[i <= 50] }
		checkLog(t, s, 1, 100, term, constStr("e"))
		// maxSize limits but returns at least one entry.
		if got, _ := s.Entries(1, 101, 1); len(got) != 1 {
			t.Fatalf("Entries with maxSize 1 returned %d", len(got))
		}
		if got, _ := s.Entries(10, 101, 300); len(got) < 2 || entriesSize(got) > 300 || len(got) == 91 {
			t.Fatalf("Entries with maxSize 300 returned %d entries, %d bytes", len(got), entriesSize(got))
		}
		if _, err := s.Entries(1, 102, 1<<30); !errors.Is(err, raft.ErrUnavailable) {
			t.Fatalf("Entries past the end: %v", err)
		}
		if _, err := s.Term(101); !errors.Is(err, raft.ErrUnavailable) {
			t.Fatalf("Term past the end: %v", err)
		}
		hs := &pb.HardState{Term: new(uint64(2)), Vote: new(uint64(3)), Commit: new(uint64(90))}
		if err := s.setHardState(hs); err != nil {
			t.Fatal(err)
		}
		s = d.reopen(s)
		checkLog(t, s, 1, 100, term, constStr("e"))
		got, cs, _ := s.InitialState()
		if got.GetTerm() != 2 || got.GetVote() != 3 || got.GetCommit() != 90 || len(cs.GetVoters()) != 0 {
			t.Fatalf("InitialState = %v %v", got, cs)
		}
		_ = s.close()
	})
}

func TestStorageConflictTruncates(t *testing.T) {
	diskKinds(t, func(t *testing.T, d *testDisk) {
		s := d.mustOpen()
		mustAppend(t, s, ents(1, 30, 1, "old"))
		// A new leader overwrites 21.. with term 2 entries.
		mustAppend(t, s, ents(21, 25, 2, "new"))
		term := func(i uint64) uint64 { return map[bool]uint64{true: 1, false: 2}[i <= 20] }
		prefix := func(i uint64) string { return map[bool]string{true: "old", false: "new"}[i <= 20] }
		checkLog(t, s, 1, 25, term, prefix)
		s = d.reopen(s)
		checkLog(t, s, 1, 25, term, prefix)
		// Overwrite inside the cached tail only.
		mustAppend(t, s, ents(25, 26, 3, "newer"))
		if tm, _ := s.Term(25); tm != 3 {
			t.Fatalf("Term(25) = %d after overwrite", tm)
		}
		_ = s.close()
	})
}

func TestStorageSnapshotCompactAndReopen(t *testing.T) {
	diskKinds(t, func(t *testing.T, d *testDisk) {
		s := d.mustOpen()
		mustAppend(t, s, ents(1, 100, 1, "e"))
		cs := &pb.ConfState{Voters: []uint64{1, 2, 3}}
		snap, err := s.createSnapshot(80, cs, []byte("image@80"))
		if err != nil {
			t.Fatal(err)
		}
		if snap.GetMetadata().GetIndex() != 80 || snap.GetMetadata().GetTerm() != 1 {
			t.Fatalf("snapshot %v", snap.GetMetadata())
		}
		if err := s.compact(context.Background(), 71); err != nil {
			t.Fatal(err)
		}
		checkLog(t, s, 71, 100, constTerm(1), constStr("e"))
		if _, err := s.Entries(70, 80, 1<<30); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("Entries below first: %v", err)
		}
		if tm, err := s.Term(70); err != nil || tm != 1 {
			t.Fatalf("Term(first-1) = %d, %v", tm, err)
		}
		if _, err := s.Term(69); !errors.Is(err, raft.ErrCompacted) {
			t.Fatalf("Term below first-1: %v", err)
		}
		// Commit only in memory: the snapshot raises it on reopen.
		_ = s.setHardState(&pb.HardState{Term: new(uint64(1)), Commit: new(uint64(60))})
		s = d.reopen(s)
		checkLog(t, s, 71, 100, constTerm(1), constStr("e"))
		hs, gotCS, _ := s.InitialState()
		if hs.GetCommit() != 80 || len(gotCS.GetVoters()) != 3 {
			t.Fatalf("after reopen: hs %v cs %v", hs, gotCS)
		}
		if got, _ := s.Snapshot(); string(got.GetData()) != "image@80" {
			t.Fatalf("snapshot data %q", got.GetData())
		}
		// Three more snapshots: only the newest two files stay.
		for _, i := range []uint64{85, 90, 95} {
			if _, err := s.createSnapshot(i, cs, []byte(fmt.Sprintf("image@%d", i))); err != nil {
				t.Fatal(err)
			}
		}
		names := d.fileNames()
		if sf := listSnapFiles(names); len(sf) != 2 || sf[0].index != 95 || sf[1].index != 90 {
			t.Fatalf("snapshot files %v", names)
		}
		_ = s.close()
	})
}

func (d *testDisk) fileNames() []string {
	var names []string
	var err error
	if d.dir != "" {
		names, err = newDirFiles(d.fs, d.dir).List()
	} else {
		names, err = d.files.List()
	}
	if err != nil {
		d.tb.Fatal(err)
	}
	return names
}

func TestStorageInstallSnapshot(t *testing.T) {
	diskKinds(t, func(t *testing.T, d *testDisk) {
		s := d.mustOpen()
		mustAppend(t, s, ents(1, 10, 1, "e"))
		snap := &pb.Snapshot{
			Metadata: &pb.SnapshotMetadata{Index: new(uint64(500)), Term: new(uint64(4)), ConfState: &pb.ConfState{Voters: []uint64{1}}},
			Data:     []byte("leader image"),
		}
		if err := s.installSnapshot(context.Background(), snap); err != nil {
			t.Fatal(err)
		}
		checkLog(t, s, 501, 500, nil, nil)
		if tm, err := s.Term(500); err != nil || tm != 4 {
			t.Fatalf("Term(500) = %d, %v", tm, err)
		}
		mustAppend(t, s, ents(501, 510, 4, "f"))
		_ = s.setHardState(&pb.HardState{Term: new(uint64(4)), Commit: new(uint64(505))})
		s = d.reopen(s)
		checkLog(t, s, 501, 510, constTerm(4), constStr("f"))
		if sn, _ := s.Snapshot(); sn.GetMetadata().GetIndex() != 500 {
			t.Fatalf("snapshot after reopen: %v", sn.GetMetadata())
		}
		_ = s.close()
	})
}

// crashKinds runs fn against the disk kinds that can simulate a crash.
func crashKinds(t *testing.T, fn func(t *testing.T, d *testDisk)) {
	t.Run("mem", func(t *testing.T) {
		fn(t, &testDisk{tb: t, log: newMemLog(), files: newMemFiles()})
	})
	t.Run("segment-memfs", func(t *testing.T) {
		requireSegment(t)
		fn(t, &testDisk{tb: t, dir: "/data/__cluster_metadata-0", fs: segment.NewMemFS()})
	})
}

// A crash loses unsynced entries; the hard state is brought back in line.
func TestStorageCrashRecovery(t *testing.T) {
	crashKinds(t, func(t *testing.T, d *testDisk) {
		s := d.mustOpen()
		mustAppend(t, s, ents(1, 20, 1, "e"))
		_ = s.setHardState(&pb.HardState{Term: new(uint64(1)), Vote: new(uint64(1)), Commit: new(uint64(20))})
		// Unsynced appends at a newer term, hard state not yet written.
		if err := s.append(context.Background(), ents(21, 30, 2, "lost")); err != nil {
			t.Fatal(err)
		}
		d = d.crash()
		s = d.mustOpen()
		checkLog(t, s, 1, 20, constTerm(1), constStr("e"))

		// Synced entries at term 3 whose hard state (term 3) was never
		// written: the term is raised to the last entry's, the vote cleared.
		mustAppend(t, s, ents(21, 25, 3, "kept"))
		d = d.crash()
		s = d.mustOpen()
		hs, _, _ := s.InitialState()
		if hs.GetTerm() != 3 || hs.GetVote() != 0 || hs.GetCommit() != 20 {
			t.Fatalf("hard state after crash: %v", hs)
		}

		// A conflict overwrite followed by a crash leaves the new entries
		// (synced) and none of the old tail.
		mustAppend(t, s, ents(26, 40, 3, "old"))
		mustAppend(t, s, ents(30, 32, 4, "new"))
		d = d.crash()
		s = d.mustOpen()
		term := func(i uint64) uint64 {
			switch {
			case i <= 20:
				return 1
			case i < 30:
				return 3
			}
			return 4
		}
		prefix := func(i uint64) string {
			switch {
			case i <= 20:
				return "e"
			case i <= 25:
				return "kept"
			case i < 30:
				return "old"
			}
			return "new"
		}
		checkLog(t, s, 1, 32, term, prefix)
	})
}

// A snapshot install that crashed before the log was reset leaves a log wholly
// older than the snapshot: it is restarted after the snapshot.
func TestStorageRecoversInterruptedSnapshotInstall(t *testing.T) {
	d := &testDisk{tb: t, log: newMemLog(), files: newMemFiles()}
	s := d.mustOpen()
	mustAppend(t, s, ents(1, 10, 1, "e"))
	snap := &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: new(uint64(50)), Term: new(uint64(2)), ConfState: &pb.ConfState{}}}
	if err := s.writeSnapshot(snap); err != nil { // crash right after this
		t.Fatal(err)
	}
	s = d.mustOpen()
	checkLog(t, s, 51, 50, nil, nil)
	if d.log.Start() != 51 {
		t.Fatalf("log start %d", d.log.Start())
	}

	// A log that diverges from the snapshot at its index is dropped too.
	d2 := &testDisk{tb: t, log: newMemLog(), files: newMemFiles()}
	s = d2.mustOpen()
	mustAppend(t, s, ents(1, 10, 1, "e"))
	snap = &pb.Snapshot{Metadata: &pb.SnapshotMetadata{Index: new(uint64(8)), Term: new(uint64(2)), ConfState: &pb.ConfState{}}}
	if err := s.writeSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	s = d2.mustOpen()
	checkLog(t, s, 9, 8, nil, nil)
}

func TestStorageCorruptFiles(t *testing.T) {
	d := &testDisk{tb: t, log: newMemLog(), files: newMemFiles()}
	s := d.mustOpen()
	mustAppend(t, s, ents(1, 100, 1, "e"))
	cs := &pb.ConfState{Voters: []uint64{1}}
	if _, err := s.createSnapshot(60, cs, []byte("a")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.createSnapshot(90, cs, []byte("b")); err != nil {
		t.Fatal(err)
	}
	if err := s.compact(context.Background(), 50); err != nil {
		t.Fatal(err)
	}
	_ = s.close()

	// A damaged newest snapshot: the older one still connects to the log.
	newest := snapFileName(90, 1)
	b, _ := d.files.ReadFile(newest)
	b[len(b)/2] ^= 0xff
	_ = d.files.WriteFile(newest, b)
	s = d.mustOpen()
	if sn, _ := s.Snapshot(); sn.GetMetadata().GetIndex() != 60 {
		t.Fatalf("fell back to snapshot %d", sn.GetMetadata().GetIndex())
	}
	checkLog(t, s, 50, 100, constTerm(1), constStr("e"))
	_ = s.close()

	// If no snapshot connects, opening fails with a clear error.
	_ = d.files.Remove(snapFileName(60, 1))
	if _, err := d.openStorage(); !errors.Is(err, errDiskGap) {
		t.Fatalf("open without a usable snapshot: %v", err)
	}

	// A corrupt hard state is an error, not a silent reset.
	d3 := &testDisk{tb: t, log: newMemLog(), files: newMemFiles()}
	_ = d3.files.WriteFile(hardStateFile, []byte("garbage"))
	if _, err := d3.openStorage(); !errors.Is(err, ErrCorruptState) {
		t.Fatalf("open with a corrupt hard state: %v", err)
	}
}

func TestStorageCommitOnlyHardStateIsLazy(t *testing.T) {
	d := &testDisk{tb: t, log: newMemLog(), files: newMemFiles()}
	s := d.mustOpen()
	mustAppend(t, s, ents(1, 10, 1, "e"))
	_ = s.setHardState(&pb.HardState{Term: new(uint64(1)), Vote: new(uint64(1)), Commit: new(uint64(5))})
	writes := func() string { b, _ := d.files.ReadFile(hardStateFile); return string(b) }
	before := writes()
	_ = s.setHardState(&pb.HardState{Term: new(uint64(1)), Vote: new(uint64(1)), Commit: new(uint64(9))})
	if writes() != before {
		t.Fatalf("commit-only change written at once")
	}
	_ = s.close()
	hs, err := decodeHardState([]byte(writes()))
	if err != nil || hs.GetCommit() != 9 {
		t.Fatalf("after close: %v %v", hs, err)
	}
	if !strings.HasPrefix(writes(), hardStateMagic) {
		t.Fatal("bad magic")
	}
}

func entriesSize(es []*pb.Entry) (n int) {
	for _, e := range es {
		n += proto.Size(e)
	}
	return n
}
