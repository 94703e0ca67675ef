package node_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/wire"
)

// Committed group offsets are in the metadata log: they survive the death
// of the active controller (its successor answers them and counts its
// commits in /metrics), every node's image holds them, a node restarted
// after missing commits catches up on them, and deleting the topic deletes
// them.
func TestGroupOffsetsSurviveControllerFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, withMetrics)
	tc.waitAlive(3)
	c := tc.client(ctx)
	admin := c.Admin()
	if _, err := admin.CreateTopic(ctx, client.TopicSpec{Name: "payments", Partitions: 2, ReplicationFactor: 3}); err != nil {
		t.Fatal(err)
	}
	commit := func(p int32, off int64) {
		t.Helper()
		if err := admin.CommitOffsets(ctx, "billing", []wire.GroupOffset{{Topic: "payments", Partition: p, Offset: off, LeaderEpoch: -1}}); err != nil {
			t.Fatalf("commit payments-%d=%d: %v", p, off, err)
		}
	}
	fetched := func() map[int32]int64 {
		t.Helper()
		offs, err := admin.FetchOffsets(ctx, "billing")
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		for _, o := range offs {
			out[o.Partition] = o.Offset
		}
		return out
	}
	commit(0, 100)
	commit(1, 7)
	old := tc.activeController()
	if old == 0 {
		t.Fatal("no active controller")
	}
	tc.kill(old)
	if got := fetched(); got[0] != 100 || got[1] != 7 {
		t.Fatalf("after controller %d died: %v, want 0=100 1=7", old, got)
	}
	if a := tc.activeController(); a == old {
		t.Fatalf("controller %d still active after its death", a)
	}
	commit(0, 150)
	e := scrape(t, tc.node(tc.activeController()).MetricsAddr())
	if g, n := value(t, e, "paymentlog_controller_groups"), value(t, e, "paymentlog_controller_group_commits_total"); g != 1 || n < 1 {
		t.Fatalf("the new controller's /metrics: %v groups, %v commits; want 1 and at least 1", g, n)
	}
	tc.start(old)
	waitFor(t, "every node holds billing's latest commit", 30*time.Second, func() bool {
		for _, n := range tc.running() {
			g, ok := n.Store().Image().Group("billing")
			if !ok || len(g.Offsets) != 2 {
				return false
			}
			for k, o := range g.Offsets {
				if k.Partition == 0 && o.Offset != 150 {
					return false
				}
			}
		}
		return len(tc.running()) == 3
	})
	if err := admin.DeleteTopic(ctx, "payments"); err != nil {
		t.Fatal(err)
	}
	if got := fetched(); len(got) != 0 {
		t.Fatalf("offsets of a deleted topic: %v", got)
	}
	groups, err := admin.ListGroups(ctx)
	if err != nil || len(groups) != 1 || groups[0].Group != "billing" || groups[0].Partitions != 0 {
		t.Fatalf("groups after the topic's deletion: %+v, %v", groups, err)
	}
}

// BenchmarkGroupOffsetCommit: commits of one partition's offset, 4 per
// GOMAXPROCS at a time, on a 3-node in-process cluster, with the metadata
// log fsynced as nodes run it and without (as the other node tests): what
// the metadata log takes of offset commits.
func BenchmarkGroupOffsetCommit(b *testing.B) {
	b.Run("raft-fsync", func(b *testing.B) { benchGroupOffsetCommit(b, false) })
	b.Run("raft-nosync", func(b *testing.B) { benchGroupOffsetCommit(b, true) })
}

func benchGroupOffsetCommit(b *testing.B, noSync bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tc := mustStartClusterWith(b, 3, func(cfg *node.Config) { cfg.NoRaftSync = noSync })
	tc.waitAlive(3)
	admin := tc.client(ctx).Admin()
	if _, err := admin.CreateTopic(ctx, client.TopicSpec{Name: "payments", Partitions: 8, ReplicationFactor: 3}); err != nil {
		b.Fatal(err)
	}
	var next atomic.Int32
	b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		p := next.Add(1) % 8
		for off := int64(0); pb.Next(); off++ {
			if err := admin.CommitOffsets(ctx, "bench", []wire.GroupOffset{{Topic: "payments", Partition: p, Offset: off, LeaderEpoch: -1}}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
