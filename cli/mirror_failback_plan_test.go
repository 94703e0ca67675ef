package cli

import (
	"math/rand/v2"
	"strings"
	"testing"
	"testing/quick"

	"paymentlog/client"
	"paymentlog/wire"
)

// Over random histories of mirror runs (crashes, hand-overs, records of
// the target's own, source offsets left out), a group that consumed the
// copy up to any target offset T fails back to a source offset F such
// that every source record below F that the mirror copied has a copy
// below T: the group consumed it, and resumes on the source without
// missing a record. A group at the end of what the last run wrote (and
// flushed) fails back past every source record: it reads none again.
func TestFailbackNeverSkips(t *testing.T) {
	tp := mirrorTP("t", 0)
	check := func(seed uint64) bool {
		const n = 3000
		h := newSyncHistory(rand.New(rand.NewPCG(seed, 7)), tp, n)
		// unconsumed[T]: the least mirrored source offset whose first
		// copy is at T or past it (n when none): a group that consumed
		// the copy below T did not consume it, and its fail-back must not
		// pass it.
		seen := map[int64]bool{}
		unconsumed := make([]int64, len(h.log)+1)
		for at := range unconsumed {
			unconsumed[at] = n
		}
		for at, o := range h.log {
			if o >= 0 && !seen[o] {
				seen[o] = true
				unconsumed[at] = o
			}
		}
		for at := len(h.log) - 1; at >= 0; at-- {
			unconsumed[at] = min(unconsumed[at], unconsumed[at+1])
		}
		for at := range unconsumed {
			if s, ok := h.syncs.untranslate(tp, "", int64(at)); ok && s.source > unconsumed[at] {
				t.Logf("copy offset %d fails back to source %d, past source offset %d, whose first copy is at or after it", at, s.source, unconsumed[at])
				return false
			}
		}
		if s, _ := h.syncs.untranslate(tp, "", h.mirroredEnd()); h.endFlushed {
			for o := s.source; o < n; o++ {
				if !h.skipped[o] {
					t.Logf("the end of the copy, %d, fails back to %d; the source record at %d would be read again", h.mirroredEnd(), s.source, o)
					return false
				}
			}
		}
		return true
	}
	if err := quick.Check(check, &quick.Config{MaxCount: 200}); err != nil {
		t.Fatal(err)
	}
}

// planFailback with the prefix policy: offsets of eu1.t on the target go
// to t on the source by the syncs of the copy's incarnation (between two
// syncs, the earlier; at the copy's end, the source's end), clamped to
// the source partition's high watermark (the source lost its tail) and
// log start; the source group's own offset past the fail-back is not
// moved back unless rewind; a partition with no sync at or below its
// offset, one of another incarnation's syncs only, and one missing on the
// source are not committed; topics that are not copies from eu1 are left
// out and named.
func TestPlanFailback(t *testing.T) {
	policy := replicationPolicy{prefix: true, sourceAlias: "eu1", separator: "."}
	syncs := newSyncMap()
	for p := range int32(8) {
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 0, target: 10, topicID: "copy", dstTopic: "eu1.t"})
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 1000, target: 1010, topicID: "copy", dstTopic: "eu1.t"})
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 2000, target: 2010, topicID: "copy", dstTopic: "eu1.t"})
	}
	sources := map[client.TopicPartition]targetPartition{}
	for p := range int32(7) {
		sources[mirrorTP("t", p)] = targetPartition{topic: "t", topicID: "orig", logStart: 0, end: 2000}
	}
	sources[mirrorTP("t", 2)] = targetPartition{topic: "t", topicID: "orig", logStart: 0, end: 1950} // lost its tail
	sources[mirrorTP("t", 3)] = targetPartition{topic: "t", topicID: "orig", logStart: 1500, end: 2000}
	copyOffs := []wire.GroupOffset{
		{Topic: "eu1.t", TopicID: "copy", Partition: 0, Offset: 1500}, // between syncs: 1000
		{Topic: "eu1.t", TopicID: "copy", Partition: 1, Offset: 2010}, // the copy's end: the source's
		{Topic: "eu1.t", TopicID: "copy", Partition: 2, Offset: 2010}, // past the source's end 1950
		{Topic: "eu1.t", TopicID: "copy", Partition: 3, Offset: 1200}, // 1000, below the log start 1500
		{Topic: "eu1.t", TopicID: "copy", Partition: 4, Offset: 1500}, // the source group at 1700
		{Topic: "eu1.t", TopicID: "copy", Partition: 5, Offset: 5},    // below the first sync
		{Topic: "eu1.t", TopicID: "old", Partition: 6, Offset: 1500},  // an incarnation with no syncs
		{Topic: "eu1.t", TopicID: "copy", Partition: 7, Offset: 1500}, // no partition 7 on the source
		{Topic: "t", TopicID: "local", Partition: 0, Offset: 99},      // the target's own t
		{Topic: "ap1.t", TopicID: "x", Partition: 0, Offset: 99},      // another source's copy
	}
	srcOffs := []wire.GroupOffset{{Topic: "t", Partition: 4, Offset: 1700}, {Topic: "t", Partition: 1, Offset: 500}}
	type want struct {
		offset     int64
		commits    bool
		note, info string
	}
	check := func(rewind bool, wants []want) {
		t.Helper()
		plan, notCopies := planFailback(copyOffs, srcOffs, syncs, sources, policy, rewind)
		if strings.Join(notCopies, ",") != "ap1.t,t" || len(plan) != len(wants) {
			t.Fatalf("plan %+v, not copies %v", plan, notCopies)
		}
		for i, w := range wants {
			f := plan[i]
			if f.tp != mirrorTP("t", int32(i)) || f.copy != mirrorTP("eu1.t", int32(i)) || f.offset != w.offset || f.commits() != w.commits ||
				(w.note == "") != (f.note == "") || !strings.Contains(f.note, w.note) || (w.info == "") != (f.info == "") || !strings.Contains(f.info, w.info) {
				t.Errorf("%s: %+v; want %+v", f.tp, f, w)
			}
		}
	}
	wants := []want{
		{1000, true, "", ""},
		{2000, true, "", ""},
		{1950, true, "", "t/2 (from eu1.t/2 on the target): copy offset 2010 fails back to source offset 2000, past the source's log end 1950"},
		{1500, true, "", "copy offset 1200 fails back to source offset 1000, below the source's log start 1500"},
		{1000, false, "the group is at 1700 on the source, past the fail-back 1000 of copy offset 1500: not moved back (--rewind moves it)", ""},
		{-1, false, "no offset sync at or below the group's offset 5 of the copy", ""},
		{-1, false, "no offset sync at or below the group's offset 1500 of the copy", ""},
		{-1, false, "t/7 (from eu1.t/7 on the target): no such partition on the source", ""},
	}
	check(false, wants)
	commits := failbackCommits(func() []failbackPartition {
		p, _ := planFailback(copyOffs, srcOffs, syncs, sources, policy, false)
		return p
	}())
	if len(commits) != 4 || commits[0].Topic != "t" || commits[0].TopicID != "orig" || commits[0].Offset != 1000 || commits[3].Partition != 3 ||
		commits[0].Metadata != "paymentlog mirror: failed back from eu1.t/0 offset 1500" {
		t.Fatalf("commits %+v", commits)
	}
	wants[4] = want{1000, true, "", ""}
	check(true, wants)
}
