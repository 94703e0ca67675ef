package raftnode

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"paymentlog/segment"
)

// testMetaDir is where segment-backed test nodes keep their metadata log.
const testMetaDir = "/data/__cluster_metadata-0"

// segmentFiles returns node id's metadata log segment files (names), in
// offset order, with their base offsets.
func (c *testCluster) segmentFiles(id uint64) (names []string, bases []uint64) {
	c.t.Helper()
	all, err := c.fss[id].ReadDir(testMetaDir)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, n := range all {
		digits, ok := strings.CutSuffix(n, ".log")
		if !ok || len(digits) != 20 {
			continue
		}
		b, err := strconv.ParseUint(digits, 10, 64)
		if err != nil {
			c.t.Fatal(err)
		}
		names, bases = append(names, n), append(bases, b)
	}
	return names, bases
}

// corruptEntry flips a bit in the record of entry index in node id's
// metadata log (on disk and in its mapping, as rot would; a second call
// flips it back) and returns the segment file and whether it is the active
// (last) one.
func (c *testCluster) corruptEntry(id, index uint64) (file string, active bool) {
	c.t.Helper()
	return c.damageEntry(id, index, func(b []byte) { b[len(b)-1] ^= 0x40 }) // the last byte of the entry's data
}

// damageEntry applies rot to the bytes of entry index's batch in node id's
// metadata log (see corruptEntry).
func (c *testCluster) damageEntry(id, index uint64, rot func(batch []byte)) (file string, active bool) {
	c.t.Helper()
	names, bases := c.segmentFiles(id)
	i := len(bases) - 1
	for i > 0 && bases[i] > index {
		i--
	}
	file = filepath.Join(testMetaDir, names[i])
	found := false
	err := c.fss[id].Corrupt(file, func(d []byte) []byte {
		pos := 0
		_, _ = segment.SplitBatches(d, func(b segment.Batch) error {
			if uint64(b.BaseOffset()) == index {
				rot(d[pos : pos+len(b)])
				found = true
				return errStopSplit
			}
			pos += len(b)
			return nil
		})
		return d
	})
	if err != nil || !found {
		c.t.Fatalf("node %d: entry %d not found in %s (err %v)", id, index, file, err)
	}
	return file, i == len(names)-1
}

// scrubFinds runs a scrub pass on node id, which must find a corrupt entry
// and stop the node with an error wrapping segment.ErrScrubCorrupt; the
// node is then closed (as the node package's restart does).
func (c *testCluster) scrubFinds(id uint64) {
	c.t.Helper()
	n := c.nodes[id]
	_, err := n.ScrubNow(context.Background(), 0)
	if !errors.Is(err, segment.ErrScrubCorrupt) {
		c.t.Fatalf("node %d: scrub: %v; want segment.ErrScrubCorrupt", id, err)
	}
	select {
	case <-n.Done():
	case <-time.After(10 * time.Second):
		c.t.Fatalf("node %d did not stop after its scrub found a corrupt entry", id)
	}
	if !errors.Is(n.Err(), segment.ErrScrubCorrupt) {
		c.t.Fatalf("node %d stopped with %v; want an error wrapping segment.ErrScrubCorrupt", id, n.Err())
	}
	if got := n.ScrubStats().Corrupt; got != 1 {
		c.t.Fatalf("node %d: %d corrupt counted, want 1", id, got)
	}
	c.nw.unlisten(addrOf(id))
	_ = n.Close() // its log failed
	delete(c.nodes, id)
	c.nw.waitIdle(c.t)
}

// waitGuardLifted gives node id the catch-up target the other voters
// report and waits until its guard lifts at or past it.
func (c *testCluster) waitGuardLifted(id uint64) {
	c.t.Helper()
	index, term := c.catchUpTarget(c.others(id)...)
	if err := c.nodes[id].CatchUpTo(context.Background(), index, term); err != nil {
		c.t.Fatal(err)
	}
	c.tickUntil("repaired node caught up and voting", 300, func() bool { return !c.nodes[id].Status().VoteGuarded })
	if st := c.nodes[id].Status(); st.Commit < index {
		c.t.Fatalf("node %d: guard lifted at commit %d, below the target %d", id, st.Commit, index)
	}
}

// A follower's committed metadata entry rots in a sealed segment. Its
// scrub finds it and stops the node; the restart sets the segments aside,
// truncates the log at the entry and starts vote-guarded; the leader's
// heartbeats (commit beyond its log) do not kill it, it catches up, its
// guard lifts at the target, and every voter applies the same entries.
func TestScrubRepairsCorruptMetadataEntry(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SegmentBytes = 4096 })
	c.segment = true
	c.startVoters()
	lead := c.leader()
	var want []string
	var victim uint64
	for i := range 80 {
		v := fmt.Sprintf("value-%02d", i)
		idx := c.propose(lead, v)
		if i == 5 {
			victim = idx
		}
		want = append(want, v)
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	b := c.others(lead)[0]
	if _, err := c.nodes[b].ScrubNow(context.Background(), 0); err != nil {
		t.Fatalf("scrub of a sound log: %v", err)
	}
	clean := c.nodes[b].ScrubStats()
	if clean.Bytes == 0 || clean.Passes != 1 || clean.Corrupt != 0 {
		t.Fatalf("scrub of a sound log: %+v", clean)
	}
	file, active := c.corruptEntry(b, victim)
	if active {
		t.Fatalf("entry %d is in the active segment %s; the test wants a sealed one", victim, file)
	}
	c.scrubFinds(b)

	c.start(b)
	st := c.nodes[b].Status()
	if !st.VoteGuarded || st.LastIndex >= victim {
		t.Fatalf("repaired node %d: guarded %v, last index %d; want guarded, truncated below %d", b, st.VoteGuarded, st.LastIndex, victim)
	}
	q := filepath.Join(testMetaDir, fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, victimBase(c, file)))
	if kept, err := c.fss[b].ReadDir(q); err != nil || len(kept) == 0 {
		t.Fatalf("quarantine %s: %v %v; want the segments set aside", q, kept, err)
	}

	c.waitApplied(c.nodes[c.leader()].Status().Applied)
	c.waitGuardLifted(b)
	c.waitApplied(c.propose(c.leader(), "after"))
	c.checkSame(append(want, "after"))
	select {
	case <-c.nodes[b].Done():
		t.Fatalf("node %d stopped: %v", b, c.nodes[b].Err())
	default:
	}
	if _, err := c.nodes[b].ScrubNow(context.Background(), 0); err != nil {
		t.Fatalf("scrub after the repair: %v", err)
	}
}

// victimBase returns the base offset in a segment file's name.
func victimBase(c *testCluster, file string) uint64 {
	c.t.Helper()
	b, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(file), ".log"), 10, 64)
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}

// KIP-853's problem, by rot rather than a wiped disk. Entry "acked" is
// committed on A (the leader) and B while C is cut off. B's scrub finds
// "before" rotten (in its active segment, below its applied index); its
// repair truncates "before" and "acked". A dies. Unguarded, B would vote
// for C (whose log is longer than B's repaired one), and C, lacking
// "acked", would commit another entry at its index. The repaired B is
// vote-guarded: B and C cannot elect anyone until A is back, and B votes
// again only once it caught up to the others' target.
func TestScrubRepairedVoterDoesNotVoteBeforeCatchingUp(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, nil)
	c.segment = true
	c.startVoters()
	a := c.leader()
	rest := c.others(a)
	b, cc := rest[0], rest[1]
	before := c.propose(a, "before")
	c.waitApplied(before)

	c.nw.setCut(addrOf(cc), true)
	acked := c.propose(a, "acked") // applied on A: committed on A and B
	c.waitLastIndex(b, acked)
	if _, active := c.corruptEntry(b, before); !active {
		t.Fatal("the test wants the rot in the active segment")
	}
	c.scrubFinds(b)
	c.kill(a)
	c.nw.setCut(addrOf(cc), false)
	c.start(b)
	if st := c.nodes[b].Status(); !st.VoteGuarded || st.LastIndex >= before {
		t.Fatalf("repaired node %d: guarded %v, last index %d; want guarded, truncated below %d", b, st.VoteGuarded, st.LastIndex, before)
	}

	// Ten election timeouts: B and C must not elect a leader (C lacks
	// "acked"; only B's vote could make it leader).
	c.checkNoLeaderWithout(a, acked, "repaired", b, cc)

	c.start(a)
	lead := c.leader()
	if lead == b {
		t.Fatalf("the repaired node %d was elected", b)
	}
	c.waitGuardLifted(b)
	c.waitApplied(c.propose(lead, "after"))
	c.checkSame([]string{"before", "acked", "after"})

	// B counts again: with A dead, B and C elect a leader.
	c.kill(a)
	c.waitApplied(c.propose(c.leader(), "without a"))
	c.checkSame([]string{"before", "acked", "after", "without a"})
}

// A single voter whose metadata log rots has no other copy of its
// committed entries: it refuses to start, at every try, with one line
// naming the copy set aside and the mark, and its log stays as it was.
func TestScrubOnlyVoterRefusesToStart(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 1, nil)
	c.segment = true
	c.startVoters()
	c.leader()
	idx := c.propose(1, "only")
	c.propose(1, "later")
	c.waitApplied(idx + 1)
	c.corruptEntry(1, idx)
	c.scrubFinds(1)
	q := filepath.Join(testMetaDir, segment.ScrubQuarantinePrefix+"00000000000000000001")
	for range 2 {
		_, err := Start(context.Background(), c.config(1))
		if !errors.Is(err, ErrScrubOnlyVoter) || !strings.Contains(err.Error(), q) ||
			!strings.Contains(err.Error(), segment.ScrubMarkPath(testMetaDir)) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("start: %v; want one line wrapping ErrScrubOnlyVoter naming %s and the mark", err, q)
		}
		if _, marked, _ := segment.ScrubMarked(c.fss[1], testMetaDir); !marked {
			t.Fatal("the refused start repaired the log")
		}
		if kept, err := c.fss[1].ReadDir(q); err != nil || len(kept) != 3 || !slices.Contains(kept, "00000000000000000001.log") { // with set-aside-at and sole-copy
			t.Fatalf("quarantine %s: %v %v", q, kept, err)
		}
	}
}

// A rotten snapshot file is repaired while the node runs: the latest one
// is written again from memory, an older one removed; the node restarts
// from its snapshot as before.
func TestScrubRewritesCorruptSnapshot(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotEvery, cfg.CatchUpEntries = 10, 5 })
	c.segment = true
	c.startVoters()
	lead := c.leader()
	var want []string
	for i := range 35 {
		v := fmt.Sprintf("v%02d", i)
		c.propose(lead, v)
		want = append(want, v)
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	id := c.others(lead)[0]
	snaps := func() []snapFile {
		names, err := c.fss[id].ReadDir(testMetaDir)
		if err != nil {
			t.Fatal(err)
		}
		return listSnapFiles(names)
	}
	// A follower that lagged may have installed the leader's snapshot
	// (and removed its own): it has two again after its next one.
	for i := 0; len(snaps()) < 2 && i < 2*10; i++ {
		v := fmt.Sprintf("w%02d", i)
		c.waitApplied(c.propose(lead, v))
		want = append(want, v)
	}
	sfs := snaps()
	if len(sfs) != 2 {
		t.Fatalf("node %d has snapshots %v; want 2", id, sfs)
	}
	flip := func(sf snapFile) {
		if err := c.fss[id].Corrupt(filepath.Join(testMetaDir, sf.name), func(d []byte) []byte { d[len(d)/2] ^= 1; return d }); err != nil {
			t.Fatal(err)
		}
	}
	flip(sfs[0])
	flip(sfs[1])
	sum, err := c.nodes[id].ScrubNow(context.Background(), 0)
	if err != nil || sum.Snapshots != 2 || sum.SnapshotsRewritten != 2 {
		t.Fatalf("scrub: %+v, %v; want both snapshot files found and repaired", sum, err)
	}
	if st := c.nodes[id].ScrubStats(); st.Corrupt != 2 || st.SnapshotsRewritten != 2 {
		t.Fatalf("stats %+v", st)
	}
	after := snaps()
	if len(after) != 1 || after[0] != sfs[0] {
		t.Fatalf("snapshots after the repair %v; want only the latest %v", after, sfs[0])
	}
	d := newDirFiles(c.fss[id], testMetaDir)
	if b, err := d.ReadFile(sfs[0].name); err != nil || checkSnapFile(sfs[0], b) != nil {
		t.Fatalf("the latest snapshot after the repair: %v", err)
	}
	if sum, err := c.nodes[id].ScrubNow(context.Background(), 0); err != nil || sum.SnapshotsRewritten != 0 {
		t.Fatalf("second scrub: %+v, %v", sum, err)
	}
	c.kill(id)
	c.start(id)
	c.waitApplied(c.propose(c.leader(), "after"))
	c.checkSame(append(want, "after"))
}

// Rot in an entry below the latest snapshot: the repair truncates there,
// the log restarts after the snapshot (the state machine restores from it:
// the entries below it are not fetched again), and the node catches up
// from the snapshot on under the guard, having lost the entries after the
// snapshot. With none after it (the snapshot was the log's end) the node
// lost nothing it acknowledged (scrub_sound.go): unguarded, but the copy of
// what the cut took out is kept (the sweep removes it).
func TestScrubRepairBelowTheSnapshot(t *testing.T) {
	requireSegment(t)
	for _, after := range []int{3, 0} {
		t.Run(fmt.Sprintf("%d entries after the snapshot", after), func(t *testing.T) {
			c := newTestCluster(t, 3, func(cfg *Config) { cfg.SnapshotEvery, cfg.CatchUpEntries = 20, 10 })
			c.segment = true
			c.startVoters()
			lead := c.leader()
			b := c.others(lead)[0]
			// Until b's latest snapshot is at its log's end (one entry at a
			// time: it snapshots at its applied index).
			var want []string
			var si uint64
			for i := 0; si == 0 || si != c.nodes[b].Status().LastIndex; i++ {
				if i == 60 {
					t.Fatalf("node %d: no snapshot at its log's end after %d entries", b, i)
				}
				v := fmt.Sprintf("v%02d", i)
				c.waitApplied(c.propose(lead, v))
				want = append(want, v)
				names, err := c.fss[b].ReadDir(testMetaDir)
				if err != nil {
					t.Fatal(err)
				}
				if sfs := listSnapFiles(names); len(sfs) > 0 && i >= 25 {
					si = sfs[0].index
				}
			}
			for i := range after {
				v := fmt.Sprintf("after the snapshot %d", i)
				c.propose(lead, v)
				want = append(want, v)
			}
			c.waitApplied(c.nodes[lead].Status().Applied)
			c.waitLastIndex(b, si+uint64(after))
			victim := si - 3 // kept in the log for followers' catch-up (CatchUpEntries)
			file, _ := c.corruptEntry(b, victim)
			c.scrubFinds(b)
			sm := &testSM{}
			c.startSM(b, sm)
			st := c.nodes[b].Status()
			if st.VoteGuarded != (after > 0) || st.LastIndex != si || st.Applied != si {
				t.Fatalf("repaired node %d: %+v; want guarded %v, its log restarted after the snapshot %d", b, st, after > 0, si)
			}
			if got := sm.values(); len(got) == 0 {
				t.Fatal("the state machine was not restored from the snapshot")
			}
			if kept, err := c.fss[b].ReadDir(quarantineOf(c, file)); err != nil || len(kept) == 0 {
				t.Fatalf("quarantine: %v %v; want what the cut took out kept", kept, err)
			}
			if after > 0 {
				c.waitGuardLifted(b)
			}
			c.waitApplied(c.propose(c.leader(), "after"))
			c.checkSame(append(want, "after"))
		})
	}
}

// A scrub pass runs beside the Ready loop, which never waits for it: with
// the pass held back by its throttle (a byte a second) after its first
// chunk, proposals commit and apply on the node as usual.
func TestScrubDoesNotHoldTheLoop(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, nil)
	c.segment = true
	c.startVoters()
	lead := c.leader()
	big := strings.Repeat("x", 16<<10)
	want := []string{}
	for range 2 * scrubChunk / len(big) { // two chunks: the throttle waits after the first
		want = append(want, big)
		c.propose(lead, big)
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.nodes[lead].ScrubNow(ctx, 1)
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for c.nodes[lead].ScrubStats().Bytes == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the scrub never started")
		}
		time.Sleep(time.Millisecond)
	}
	for i := range 20 {
		v := fmt.Sprintf("b%d", i)
		c.propose(lead, v)
		want = append(want, v)
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	c.checkSame(want)
	select {
	case err := <-done:
		t.Fatalf("the throttled pass ended early: %v", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("scrub after cancel: %v", err)
	}
}

// A voter still guarded from its first start (its nonce one a first-start
// witness may vouch for) that acknowledged entries and then had them
// repaired away gets a new nonce: the old one, vouched for, no longer
// lifts its guard.
func TestScrubRepairDrawsANewGuardNonce(t *testing.T) {
	requireSegment(t)
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.RejoinGuard = cfg.ID == 3 })
	c.segment = true
	c.startVoters()
	lead := c.leader()
	if lead == 3 {
		t.Fatal("the guarded node was elected")
	}
	old := c.nodes[3].Status().GuardNonce
	if !IsGuardNonce(old) {
		t.Fatalf("node 3 is not guarded at its first start: %+v", c.nodes[3].Status())
	}
	idx := c.propose(lead, "a")
	c.propose(lead, "b")
	c.waitApplied(idx + 1)
	c.corruptEntry(3, idx)
	c.scrubFinds(3)
	c.start(3)
	st := c.nodes[3].Status()
	if !st.VoteGuarded || st.GuardNonce == old || !IsGuardNonce(st.GuardNonce) {
		t.Fatalf("repaired node 3: guarded %v, nonce %q (was %q); want guarded with a new nonce", st.VoteGuarded, st.GuardNonce, old)
	}
	if err := c.nodes[3].LiftGuard(context.Background(), old); !errors.Is(err, ErrGuardNonceMismatch) {
		t.Fatalf("LiftGuard with the first start's nonce: %v; want ErrGuardNonceMismatch", err)
	}
	c.waitGuardLifted(3)
	c.waitApplied(c.propose(c.leader(), "c"))
	c.checkSame([]string{"a", "b", "c"})
}
