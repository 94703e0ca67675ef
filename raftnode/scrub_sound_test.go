package raftnode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"paymentlog/segment"
)

// scrubFindsInMemory rots entry index of node id where its scrub reads it,
// lets the scrub find it and stop the node, and puts the bytes back: the
// damage was in memory (or a read error), and the file checks out at the
// restart. It returns the quarantine a repair of that segment uses.
func (c *testCluster) scrubFindsInMemory(id, index uint64) string {
	c.t.Helper()
	names, _ := c.segmentFiles(id)
	var sound []byte
	file := filepath.Join(testMetaDir, names[len(names)-1])
	if err := c.fss[id].Corrupt(file, func(d []byte) []byte { sound = slices.Clone(d); return d }); err != nil {
		c.t.Fatal(err)
	}
	if f, _ := c.corruptEntry(id, index); f != file {
		c.t.Fatalf("entry %d is in %s, not in the active segment %s", index, f, file)
	}
	c.scrubFinds(id)
	if err := c.fss[id].Corrupt(file, func([]byte) []byte { return sound }); err != nil { // put back
		c.t.Fatal(err)
	}
	return quarantineOf(c, file)
}

// quarantineOf is the quarantine a repair of segment file uses.
func quarantineOf(c *testCluster, file string) string {
	return filepath.Join(testMetaDir, fmt.Sprintf("%s%020d", segment.ScrubQuarantinePrefix, victimBase(c, file)))
}

// startSegmentVoters starts 3 voters on segment storage (tune as
// newTestCluster's) and returns the cluster, its leader and a follower.
func startSegmentVoters(t *testing.T, tune func(*Config)) (c *testCluster, lead, follower uint64) {
	t.Helper()
	requireSegment(t)
	c = newTestCluster(t, 3, tune)
	c.segment = true
	c.startVoters()
	lead = c.leader()
	return c, lead, c.others(lead)[0]
}

// guardLiftsAndAllAgree waits until node id's guard lifts at the target
// the others report, commits next and checks that every node applied want
// and next.
func (c *testCluster) guardLiftsAndAllAgree(id uint64, want []string, next string) {
	c.t.Helper()
	c.waitGuardLifted(id)
	c.waitApplied(c.propose(c.leader(), next))
	c.checkSame(append(want, next))
}

// checkFiles fails unless node id's metadata directory holds (want) or
// lacks each of names.
func (c *testCluster) checkFiles(id uint64, want bool, names ...string) {
	c.t.Helper()
	have, err := c.fss[id].ReadDir(testMetaDir)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, name := range names {
		if slices.Contains(have, name) != want {
			c.t.Fatalf("node %d: %s there: %v, want %v (files %v)", id, name, !want, want, have)
		}
	}
}

// The scrub finds an entry corrupt, but the restart's re-check finds the
// file sound and the log still ending at the entry it ended at: nothing the
// node acknowledged was taken out (scrub_sound.go). It starts unguarded,
// its log whole, with no copy set aside and no record left, and it votes
// at once: with the leader dead, it and the third voter elect one.
func TestScrubRepairOfASoundLogSkipsTheGuard(t *testing.T) {
	c, a, b := startSegmentVoters(t, nil)
	before := c.propose(a, "before")
	c.waitApplied(c.propose(a, "acked"))
	c.waitLastIndex(b, c.nodes[a].Status().LastIndex)
	last := c.nodes[b].Status().LastIndex
	q := c.scrubFindsInMemory(b, before)

	c.start(b)
	if st := c.nodes[b].Status(); st.VoteGuarded || st.LastIndex != last {
		t.Fatalf("node %d after a repair that took nothing out: guarded %v, last index %d; want unguarded, last index %d", b, st.VoteGuarded, st.LastIndex, last)
	}
	if kept, err := c.fss[b].ReadDir(q); len(kept) > 0 || (err != nil && !errors.Is(err, os.ErrNotExist)) { // MemFS keeps empty directories
		t.Fatalf("quarantine %s: %v %v; want none (a copy of a log kept whole)", q, kept, err)
	}
	if got := c.nodes[b].ScrubStats().QuarantineBytes; got != 0 {
		t.Fatalf("%d quarantine bytes", got)
	}
	c.checkFiles(b, false, rejoinGuardFile, scrubLogEndFile)
	c.kill(a)
	c.waitApplied(c.propose(c.leader(), "without a"))
	c.checkSame([]string{"before", "acked", "without a"})
}

// A node under its first start's guard whose repair takes nothing out
// keeps that guard, with its nonce: a first-start witness may still vouch
// for it (the storage still holds all it acknowledged).
func TestScrubRepairOfASoundLogKeepsAnEarlierGuard(t *testing.T) {
	c, lead, _ := startSegmentVoters(t, func(cfg *Config) { cfg.RejoinGuard = cfg.ID == 3 })
	old := c.nodes[3].Status().GuardNonce
	if lead == 3 || !IsGuardNonce(old) {
		t.Fatalf("node 3 (leader %d) not guarded at its first start: %+v", lead, c.nodes[3].Status())
	}
	idx := c.propose(lead, "a")
	c.waitApplied(c.propose(lead, "b"))
	c.scrubFindsInMemory(3, idx)
	c.start(3)
	if st := c.nodes[3].Status(); !st.VoteGuarded || st.GuardNonce != old {
		t.Fatalf("node 3: guarded %v, nonce %q; want still guarded with its first start's nonce %q", st.VoteGuarded, st.GuardNonce, old)
	}
	if err := c.nodes[3].LiftGuard(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	c.waitApplied(c.propose(c.leader(), "c"))
	c.checkSame([]string{"a", "b", "c"})
}

// Without the record of where the log ended (a failed write, a crash
// before it, an older build) a sound re-check proves nothing, nor with
// another entry at that index (another term: a log re-written with other
// entries), nor with a log that goes on past it (re-written too): guarded,
// the copy kept.
func TestScrubRepairGuardsWhenTheLogEndIsUnknown(t *testing.T) {
	for _, tc := range []struct {
		name   string
		record func(e scrubLogEnd) []byte // nil: none
	}{
		{"no record", nil},
		{"another term there", func(e scrubLogEnd) []byte { e.term++; return encodeScrubLogEnd(e) }},
		{"the log ends past it", func(e scrubLogEnd) []byte { e.index--; return encodeScrubLogEnd(e) }}, // same term
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a, b := startSegmentVoters(t, nil)
			idx := c.propose(a, "a")
			c.waitApplied(c.propose(a, "b"))
			q := c.scrubFindsInMemory(b, idx)
			files := newDirFiles(c.fss[b], testMetaDir)
			raw, err := files.ReadFile(scrubLogEndFile)
			if err != nil {
				t.Fatal(err)
			}
			if tc.record == nil {
				err = files.Remove(scrubLogEndFile)
			} else {
				e, derr := decodeScrubLogEnd(raw)
				if derr != nil {
					t.Fatal(derr)
				}
				err = files.WriteFile(scrubLogEndFile, tc.record(e))
			}
			if err != nil {
				t.Fatal(err)
			}
			c.start(b)
			if st := c.nodes[b].Status(); !st.VoteGuarded {
				t.Fatalf("node %d: %+v; want guarded", b, st)
			}
			if kept, err := c.fss[b].ReadDir(q); err != nil || len(kept) == 0 {
				t.Fatalf("quarantine %s: %v %v; want it kept", q, kept, err)
			}
			c.guardLiftsAndAllAgree(b, []string{"a", "b"}, "c")
		})
	}
}

// A batch header rotted to zeros in the active segment (a zeroed sector):
// the open takes it for the end of the data and cuts the log there,
// reporting no tear (the segment "checks out"). The log no longer ends
// where it did, so the node is guarded all the same.
func TestScrubRepairGuardsWhenTheOpenCutsSilently(t *testing.T) {
	c, a, b := startSegmentVoters(t, nil)
	victim := c.propose(a, "rots")
	c.waitApplied(c.propose(a, "after it"))
	c.waitLastIndex(b, c.nodes[a].Status().LastIndex)
	if _, active := c.damageEntry(b, victim, func(batch []byte) { clear(batch[:segment.HeaderSize]) }); !active {
		t.Fatal("the test wants the rot in the active segment")
	}
	c.scrubFinds(b)
	c.start(b)
	st := c.nodes[b].Status()
	t.Logf("segment's TornAtOpen after the cut: %v", c.nodes[b].st.log.(*segmentLog).log.TornAtOpen())
	if !st.VoteGuarded || st.LastIndex >= victim {
		t.Fatalf("node %d: guarded %v, last index %d; want guarded, the log cut below %d", b, st.VoteGuarded, st.LastIndex, victim)
	}
	c.guardLiftsAndAllAgree(b, []string{"rots", "after it"}, "c")
}

// A broker-only node's metadata log (a learner of the 3-voter group) rots:
// its scrub finds it, the restart sets the segments aside and truncates,
// and the learner starts unguarded (it never votes; raft counts no
// learner's vote), refetches what it lost (its leader hands leadership over
// to reset its progress: lostlog.go) and applies what the voters apply.
func TestScrubRepairsALearner(t *testing.T) {
	c, lead, _ := startSegmentVoters(t, nil)
	c.start(4)
	ctx := context.Background()
	if err := c.nodes[lead].AddLearner(ctx, 4, addrOf(4)); err != nil {
		t.Fatal(err)
	}
	var want []string
	var victim uint64
	for i := range 20 {
		want = append(want, fmt.Sprintf("v%02d", i))
		idx := c.propose(lead, want[i])
		if i == 5 {
			victim = idx
		}
	}
	c.waitApplied(c.nodes[lead].Status().Applied)
	file, _ := c.corruptEntry(4, victim)
	c.scrubFinds(4)
	c.start(4)
	st := c.nodes[4].Status()
	if st.VoteGuarded || st.LastIndex >= victim {
		t.Fatalf("repaired learner: %+v; want unguarded, truncated below %d", st, victim)
	}
	c.checkFiles(4, false, rejoinGuardFile, scrubLogEndFile)
	if kept, err := c.fss[4].ReadDir(quarantineOf(c, file)); err != nil || len(kept) == 0 {
		t.Fatalf("quarantine: %v %v; want the segments set aside", kept, err)
	}
	want = append(want, "after")
	c.waitApplied(c.propose(c.leader(), "after"))
	c.checkSame(want)
	if st := c.nodes[4].Status(); !slices.Contains(st.Learners, 4) || st.VoteGuarded {
		t.Fatalf("learner after catching up: %+v", st)
	}
	if _, err := c.nodes[4].ScrubNow(ctx, 0); err != nil {
		t.Fatalf("scrub after the repair: %v", err)
	}
}

// A voter left out of Config.Voters is a voter all the same (doc.go): its
// repair guards it, as the record of its last start's role says, though
// the list no longer names it.
func TestScrubRepairGuardsAnUnlistedVoter(t *testing.T) {
	c, lead, _ := startSegmentVoters(t, nil)
	id := c.others(lead)[1]
	idx := c.propose(lead, "a")
	c.waitApplied(c.propose(lead, "b"))
	c.corruptEntry(id, idx)
	c.scrubFinds(id)
	c.tune = func(cfg *Config) {
		if cfg.ID == id {
			cfg.Voters = maps.Clone(cfg.Voters)
			delete(cfg.Voters, id)
		}
	}
	c.start(id)
	if st := c.nodes[id].Status(); !st.VoteGuarded {
		t.Fatalf("repaired unlisted voter %d: %+v; want guarded", id, st)
	}
	c.guardLiftsAndAllAgree(id, []string{"a", "b"}, "c")
	if st := c.nodes[id].Status(); !slices.Contains(st.Voters, id) {
		t.Fatalf("node %d: %+v; want a voter", id, st)
	}
}

// A record with no scrub's mark (a crash between the repair's open and its
// settling) is stale: the start removes it, so that it never stands for a
// later scrub's whose own record could not be written.
func TestStaleScrubLogEndRemovedAtStart(t *testing.T) {
	c, lead, b := startSegmentVoters(t, nil)
	c.waitApplied(c.propose(lead, "a"))
	st := c.nodes[b].Status()
	c.kill(b)
	stale := encodeScrubLogEnd(scrubLogEnd{index: st.LastIndex, term: st.Term, start: 1, voter: true})
	if err := newDirFiles(c.fss[b], testMetaDir).WriteFile(scrubLogEndFile, stale); err != nil {
		t.Fatal(err)
	}
	c.start(b)
	c.checkFiles(b, false, scrubLogEndFile)
}
