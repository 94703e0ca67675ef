package raftnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/segment/segmenttest"
)

// The decision, rule by rule: each case breaks exactly one of them.
func TestMetadataQuarantineVerdict(t *testing.T) {
	setAside := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	known := segment.QuarantineRange{FirstOffset: 40, LastOffset: 90, LastEpoch: 3}
	ok := quarantineFacts{retention: time.Hour, rng: known, voter: true, voters: 3, applied: 91}
	for _, tc := range []struct {
		name   string
		now    time.Time
		change func(*quarantineFacts)
		remove bool
		why    string
	}{
		{"redundant", setAside.Add(time.Hour), nil, true, ""},
		{"a learner's, caught up", setAside.Add(2 * time.Hour), func(f *quarantineFacts) { f.voter, f.voters = false, 1 }, true, ""},
		{"holds no entry", setAside.Add(time.Hour), func(f *quarantineFacts) {
			f.rng, f.applied = segment.QuarantineRange{FirstOffset: -1, LastOffset: -1, LastEpoch: -1}, 1
		}, true, ""},
		{"retention 0", setAside.Add(1000 * time.Hour), func(f *quarantineFacts) { f.retention = 0 }, false, "retention 0"},
		{"too young", setAside.Add(time.Hour - time.Millisecond), nil, false, "retention 1h"},
		{"a single voter's refused start", setAside.Add(time.Hour), func(f *quarantineFacts) { f.soleCopy = true }, false, "refused start"},
		{"range unknown", setAside.Add(time.Hour), func(f *quarantineFacts) { f.rng.Unknown, f.bound = "segment file 40.log: bad CRC", -1 }, false, "cannot be told"},
		{"range unknown, applied past its bound", setAside.Add(time.Hour), func(f *quarantineFacts) {
			f.rng, f.bound = segment.QuarantineRange{FirstOffset: -1, LastOffset: -1, LastEpoch: -1, Unknown: "bad CRC"}, 90
		}, true, ""},
		{"range unknown, applied at its bound", setAside.Add(time.Hour), func(f *quarantineFacts) {
			f.rng, f.bound = segment.QuarantineRange{FirstOffset: -1, LastOffset: -1, LastEpoch: -1, Unknown: "bad CRC"}, 91
		}, false, "applied index 91, the quarantine holds up to index 91"},
		{"only voter", setAside.Add(time.Hour), func(f *quarantineFacts) { f.voters = 1 }, false, "only voter"},
		{"guarded", setAside.Add(time.Hour), func(f *quarantineFacts) { f.guarded = true }, false, "rejoin guard"},
		{"applied at its last index", setAside.Add(time.Hour), func(f *quarantineFacts) { f.applied = 90 }, false, "applied index 90"},
		{"applied below it", setAside.Add(time.Hour), func(f *quarantineFacts) { f.applied = 12 }, false, "applied index 12"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := ok
			f.age = tc.now.Sub(setAside)
			if tc.change != nil {
				tc.change(&f)
			}
			remove, why := quarantineVerdict(f)
			if remove != tc.remove || !strings.Contains(why, tc.why) || (remove && why != "") {
				t.Fatalf("verdict %v %q; want %v, the reason naming %q", remove, why, tc.remove, tc.why)
			}
		})
	}
}

// entriesBound counts one entry per segment.HeaderSize bytes after the
// corrupt batch, up to the last non-zero byte (a batch's first bytes, its
// length, are not zero), from the index the bad batch would have.
func TestMetadataQuarantineEntriesBound(t *testing.T) {
	fsys := segment.NewMemFS()
	if err := fsys.MkdirAll("/q", 0o755); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 1000) // valid batches to 100, then 3 batches' worth and zeros
	for i := 100; i < 100+3*segment.HeaderSize; i++ {
		data[i] = 1
	}
	fh, err := fsys.OpenFile("/q/00000000000000000040.log", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	rng := segment.QuarantineRange{Unknown: "bad CRC", UnknownFile: "00000000000000000040.log", UnknownAt: 100, UnknownNext: 47}
	for _, tc := range []struct {
		rng  func(r *segment.QuarantineRange)
		want int64
	}{
		{nil, 49}, // 47, 48, 49: three batches at most
		{func(r *segment.QuarantineRange) { r.UnknownAt = 100 + 3*segment.HeaderSize }, 46}, // zeros only
		{func(r *segment.QuarantineRange) { r.UnknownAt = 100 + 3*segment.HeaderSize - 1 }, 47},
		{func(r *segment.QuarantineRange) { r.UnknownFile = "" }, -1},                         // unreadable
		{func(r *segment.QuarantineRange) { r.UnknownFile = "00000000000000000099.log" }, -1}, // gone
	} {
		r := rng
		if tc.rng != nil {
			tc.rng(&r)
		}
		if got := entriesBound(fsys, "/q", r); got != tc.want {
			t.Errorf("entriesBound(%+v) = %d, want %d", r, got, tc.want)
		}
	}
}

// A follower's metadata log is repaired (a rotten entry in a sealed
// segment) and its segments set aside, with the time. The sweep keeps the
// quarantine while the node is guarded (behind, and also once it applied
// past the quarantine's entries: it has no catch-up target yet), and, once
// its guard lifted, while it is younger than the retention
// or the retention is 0; then removes it, logs and counts it, and the
// quarantine bytes drop to 0.
func TestScrubQuarantineSweptOnceRedundant(t *testing.T) {
	requireSegment(t)
	logs := &lockedBuffer{}
	root := t.TempDir()
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.SegmentBytes = 4096
		onDisk(root, cfg, logs)
	})
	c.segment = true
	c.startVoters()
	lead := c.leader()
	var victim uint64
	for i := range 80 {
		idx := c.propose(lead, fmt.Sprintf("value-%02d", i))
		if i == 5 {
			victim = idx
		}
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	b := c.others(lead)[0]
	base := segmenttest.RotBatch(t, metaDirIn(root, b), int64(victim))
	c.scrubFinds(b)
	before := time.Now()
	c.start(b)
	n := c.nodes[b]
	if !n.Status().VoteGuarded {
		t.Fatal("the repaired node is not guarded")
	}
	name := fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, base)
	q := filepath.Join(metaDirIn(root, b), name)
	sl := n.st.log.(*segmentLog)
	qs, err := sl.log.Quarantines(before.Add(time.Hour)) // a time the repair did not write
	if err != nil || len(qs) != 1 || qs[0].Name != name {
		t.Fatalf("quarantines %+v %v; want %s", qs, err, name)
	}
	setAside := qs[0].SetAsideAt
	if setAside.Before(before.Add(-time.Second)) || setAside.After(time.Now()) {
		t.Fatalf("set aside at %v; want the repair's time, about %v", setAside, before)
	}
	rng, err := sl.log.QuarantineRange(name)
	if err != nil || rng.Unknown != "" || rng.LastOffset < int64(victim) {
		t.Fatalf("quarantine range %+v %v; want known, past %d", rng, err, victim)
	}
	if n.ScrubStats().QuarantineBytes == 0 {
		t.Fatal("no quarantine bytes counted")
	}
	kept := func(now time.Time, retention time.Duration) {
		t.Helper()
		removed, err := n.SweepScrubQuarantines(now, retention)
		if err != nil || len(removed) != 0 {
			t.Fatalf("sweep at +%s, retention %s: removed %+v, %v; want it kept", now.Sub(setAside), retention, removed, err)
		}
		if files, err := os.ReadDir(q); err != nil || len(files) == 0 {
			t.Fatalf("quarantine %s: %v %v; want it kept", q, files, err)
		}
	}
	kept(setAside.Add(2*time.Hour), time.Hour) // guarded, behind

	// The leader's entries reach it, guarded (no catch-up target yet).
	c.waitApplied(c.propose(c.leader(), "while guarded"))
	if st := n.Status(); !st.VoteGuarded || st.Applied <= uint64(rng.LastOffset) {
		t.Fatalf("%+v; want the node guarded, applied past %d", st, rng.LastOffset)
	}
	kept(setAside.Add(2*time.Hour), time.Hour) // guarded, applied past it
	c.waitGuardLifted(b)
	c.waitApplied(c.propose(c.leader(), "after"))
	if st := n.Status(); st.Applied <= uint64(rng.LastOffset) {
		t.Fatalf("applied %d, not past the quarantine's last index %d", st.Applied, rng.LastOffset)
	}
	kept(setAside.Add(time.Hour-time.Millisecond), time.Hour) // too young
	kept(setAside.Add(1000*time.Hour), 0)                     // retention 0
	removed, err := n.SweepScrubQuarantines(setAside.Add(time.Hour), time.Hour)
	if err != nil || len(removed) != 1 || removed[0].Dir != q || removed[0].Range != rng || removed[0].Bytes == 0 {
		t.Fatalf("sweep past the retention: %+v %v; want %s removed, range %+v", removed, err, q, rng)
	}
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("quarantine %s still there", q)
	}
	if st := n.ScrubStats(); st.QuarantineBytes != 0 || st.QuarantinesRemoved != 1 {
		t.Fatalf("after the removal: %+v; want 0 quarantine bytes, 1 removed", st)
	}
	if !strings.Contains(logs.String(), "removed a metadata log scrub quarantine") {
		t.Fatal("the removal was not logged")
	}
}

// A single voter's refused start marks its quarantine as the operator's:
// even once the operator starts it anyway (the mark removed) and the
// group has grown, the sweep keeps it.
func TestScrubQuarantineOfTheOnlyVoterKept(t *testing.T) {
	requireSegment(t)
	logs := &lockedBuffer{}
	root := t.TempDir()
	c := newTestCluster(t, 1, func(cfg *Config) { onDisk(root, cfg, logs) })
	c.segment = true
	c.startVoters()
	c.leader()
	idx := c.propose(1, "only")
	c.propose(1, "later")
	c.waitApplied(idx + 1)
	segmenttest.RotBatch(t, metaDirIn(root, 1), int64(idx))
	c.scrubFinds(1)
	if _, err := Start(context.Background(), c.config(1)); !errors.Is(err, ErrScrubOnlyVoter) {
		t.Fatalf("start: %v; want ErrScrubOnlyVoter", err)
	}
	q := filepath.Join(metaDirIn(root, 1), segment.ScrubQuarantinePrefix+"00000000000000000001")
	if _, err := os.Stat(filepath.Join(q, soleCopyFile)); err != nil {
		t.Fatalf("quarantine %s: %v; want it marked %s", q, err, soleCopyFile)
	}
	if _, err := os.Stat(filepath.Join(q, "set-aside-at")); err != nil {
		t.Fatalf("quarantine %s: %v; want it to record when it was set aside", q, err)
	}
	if err := os.Remove(segment.ScrubMarkPath(metaDirIn(root, 1))); err != nil {
		t.Fatal(err)
	}
	c.start(1)
	c.leader()
	c.waitApplied(c.propose(1, "after"))
	n := c.nodes[1]
	// As if the group had grown: the verdict sees a voter of several.
	f := quarantineFacts{retention: time.Hour, age: 2 * time.Hour, soleCopy: true, voter: true, voters: 3, applied: n.Status().Applied}
	if remove, _ := quarantineVerdict(f); remove {
		t.Fatal("a sole copy's quarantine would be removed")
	}
	removed, err := n.SweepScrubQuarantines(time.Now().Add(1000*time.Hour), time.Hour)
	if err != nil || len(removed) != 0 {
		t.Fatalf("sweep: %+v %v; want the only voter's quarantine kept", removed, err)
	}
	if !strings.Contains(logs.String(), "refused start") {
		t.Fatal("the reason it stays was not logged")
	}
}

// onDisk keeps a segment-backed test node's metadata log in a directory
// under root on the OS's file system (segment.MemFS lists no
// subdirectories, so it shows no quarantine), logging at INFO into logs.
func onDisk(root string, cfg *Config, logs *lockedBuffer) {
	cfg.FS, cfg.DataDir = segment.OSFS{}, metaDirIn(root, cfg.ID)
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil)).With("test_node", cfg.ID)
}

func metaDirIn(root string, id uint64) string {
	return filepath.Join(root, fmt.Sprintf("node%d", id), "__cluster_metadata-0")
}

// Rot in the active segment (the metadata log is often one segment): the
// quarantine holds only the rotten segment's copy, whose last index cannot
// be read past the bad entry. The sweep bounds it (entriesBound) and keeps
// the quarantine until the node has applied past that bound, then removes
// it.
func TestScrubQuarantineOfTheActiveSegmentSweptPastItsBound(t *testing.T) {
	requireSegment(t)
	logs := &lockedBuffer{}
	root := t.TempDir()
	c := newTestCluster(t, 3, func(cfg *Config) { onDisk(root, cfg, logs) })
	c.segment = true
	c.startVoters()
	lead := c.leader()
	for i := range 40 {
		c.propose(lead, fmt.Sprintf("value-%02d", i))
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	b := c.others(lead)[0]
	last := c.nodes[b].Status().LastIndex
	victim := c.nodes[b].Status().Applied / 2
	base := segmenttest.RotBatch(t, metaDirIn(root, b), int64(victim))
	c.scrubFinds(b)
	c.start(b)
	n := c.nodes[b]
	name := fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, base)
	rng, err := n.st.log.(*segmentLog).log.QuarantineRange(name)
	if err != nil || rng.Unknown == "" || rng.UnknownNext != int64(victim) {
		t.Fatalf("quarantine range %+v %v; want unknown from index %d", rng, err, victim)
	}
	bound := entriesBound(segment.OSFS{}, filepath.Join(metaDirIn(root, b), name), rng)
	if bound < int64(last) {
		t.Fatalf("bound %d below the log's end before the repair, %d", bound, last)
	}
	c.waitApplied(c.nodes[c.leader()].Status().Applied)
	c.waitGuardLifted(b)
	later := time.Now().Add(2 * time.Hour)
	for n.Status().Applied <= uint64(bound) {
		if removed, err := n.SweepScrubQuarantines(later, time.Hour); err != nil || len(removed) != 0 {
			t.Fatalf("applied %d, bound %d: sweep removed %+v, %v; want it kept", n.Status().Applied, bound, removed, err)
		}
		c.waitApplied(c.propose(c.leader(), "more"))
	}
	t.Logf("rotten entry %d, the log's end before the repair %d, bound %d", victim, last, bound)
	removed, err := n.SweepScrubQuarantines(later, time.Hour)
	if err != nil || len(removed) != 1 {
		t.Fatalf("applied %d past the bound %d: sweep removed %+v, %v; want the quarantine", n.Status().Applied, bound, removed, err)
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("last_index_bound=%d", bound)) {
		t.Fatal("the removal did not log the bound")
	}
}

// entriesBound reads a rotten file's bytes from disk: whatever they are,
// it returns a bound between "nothing after the bad batch" and one entry
// per segment.HeaderSize bytes, without panicking.
func FuzzEntriesBound(f *testing.F) {
	f.Add([]byte{}, uint16(0))
	f.Add(make([]byte, 200), uint16(10))
	f.Add(append(make([]byte, 61), 1), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		fsys := segment.NewMemFS()
		if err := fsys.MkdirAll("/q", 0o755); err != nil {
			t.Fatal(err)
		}
		fh, err := fsys.OpenFile("/q/00000000000000000001.log", os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fh.WriteAt(data, 0); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		rng := segment.QuarantineRange{Unknown: "bad", UnknownFile: "00000000000000000001.log", UnknownAt: int64(at), UnknownNext: 7}
		got := entriesBound(fsys, "/q", rng)
		if int(at) > len(data) {
			if got != -1 {
				t.Fatalf("bound %d past the file's end; want -1", got)
			}
			return
		}
		if hi := 7 + int64(len(data)-int(at))/segment.HeaderSize; got < 6 || got > hi {
			t.Fatalf("bound %d of %d bytes after %d; want 6..%d", got, len(data), at, hi)
		}
	})
}
