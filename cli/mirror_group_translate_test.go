package cli

import (
	"strings"
	"testing"

	"paymentlog/client"
	"paymentlog/wire"
)

// translateGroup: a translation below the target partition's log start
// commits the log start (a commit below it would have the consumer start
// wherever its auto.offset.reset says); the target group's own offset
// past the translation is not moved back, clamped or not; an unknown log
// start, a partition missing on the target, and one with no sync of the
// topic's current incarnation are not committed; commits name the
// incarnation.
func TestTranslateGroupClampsToLogStart(t *testing.T) {
	syncs := newSyncMap()
	for p := range int32(6) {
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 0, target: 100, topicID: "id1"})
		syncs.add(offsetSync{tp: mirrorTP("t", p), source: 1000, target: 1100, topicID: "id1"})
	}
	syncs.add(offsetSync{tp: mirrorTP("t", 5), source: 0, target: 0, topicID: "id0"}) // an earlier incarnation's
	targets := map[client.TopicPartition]targetPartition{
		mirrorTP("t", 0): {topicID: "id1", logStart: 500, end: 3000}, // 500 translates to 100, deleted
		mirrorTP("t", 1): {topicID: "id1", logStart: 0, end: 3000},   // 500 translates to 100
		mirrorTP("t", 2): {topicID: "id1", logStart: 500, end: 3000}, // the target group at 700
		mirrorTP("t", 3): {topicID: "id1", logStart: 500, end: 3000}, // the target group at 300, below the log start
		mirrorTP("t", 4): {topicID: "id1", logStart: -1, end: -1},    // no leader
		mirrorTP("t", 5): {topicID: "id2", logStart: 0, end: 3000},   // recreated: no sync of id2
	}
	var source []wire.GroupOffset
	for p := range int32(7) {
		source = append(source, wire.GroupOffset{Topic: "t", Partition: p, Offset: 500})
	}
	target := []wire.GroupOffset{{Topic: "t", Partition: 2, Offset: 700}, {Topic: "t", Partition: 3, Offset: 300}}
	plan := translateGroup(source, target, syncs, targets, replicationPolicy{}, nil)
	type want struct {
		target     int64
		commits    bool
		note, info string
		noSync     bool
	}
	wants := []want{
		{500, true, "", "source offset 500 translates to 100, below the target's log start 500 (retention deleted the records there): committing 500", false},
		{100, true, "", "", false},
		{500, false, "the target group is at 700, past the translation 500 of source offset 500: not moved back", "below the target's log start 500", false},
		{500, true, "", "below the target's log start 500", false},
		{-1, false, "the target partition's log start is unknown", "", false},
		{-1, false, "no offset sync at or below source offset 500", "", true},
		{-1, false, "no such partition on the target", "", false},
	}
	if len(plan) != len(wants) {
		t.Fatalf("plan of %d partitions: %+v", len(plan), plan)
	}
	for i, w := range wants {
		g := plan[i]
		if g.target != w.target || g.commits() != w.commits || g.noSync != w.noSync || (w.note == "") != (g.note == "") || !strings.Contains(g.note, w.note) ||
			(w.info == "") != (g.info == "") || !strings.Contains(g.info, w.info) {
			t.Errorf("%s: %+v; want %+v", g.tp, g, w)
		}
	}
	commits := groupCommits(plan)
	if len(commits) != 3 || commits[0].Offset != 500 || commits[0].TopicID != "id1" || commits[1].Offset != 100 || commits[2].Offset != 500 {
		t.Fatalf("commits %+v", commits)
	}
}
