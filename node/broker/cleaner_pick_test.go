package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Ranking at each pick, with real logs and one worker: after a pass that
// cleaned three partitions, a lot more is written to a, a little to b,
// nothing to c, so the next pass ranks them a, b, c. While a is being
// compacted, much more than b got is written to c: the worker takes c
// next, before b. While c is, a is written to again: a, taken already,
// is not taken again in the pass. Every partition gets one call.
func TestCleanerRanksAgainAtEachPick(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	c := newTestCluster(t, clusterOptions{nodes: 1, segBytes: retentionSegBytes, cleanerInterval: -1,
		now: func() time.Time { return now }})
	b := c.node(1).b
	a, bk, ck := tp{"payments", 0}, tp{"payments", 1}, tp{"payments", 2}
	for _, k := range []tp{a, bk, ck} {
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
		produceKeyed(t, c, k, 40, 5)
	}
	if s := b.CompactNow(context.Background()); s.Ran != 3 || s.Err != nil {
		t.Fatalf("first pass: %+v", s)
	}
	produceKeyed(t, c, a, 60, 5)
	produceKeyed(t, c, bk, 12, 5)
	dirtiness := func(k tp) segment.Dirtiness {
		t.Helper()
		p := b.partition(k.topic, k.partition)
		o, _, _ := p.compactOptions(now)
		d, err := p.log.Dirtiness(o)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if da, db, dc := dirtiness(a), dirtiness(bk), dirtiness(ck); !(da.DirtyRatio > db.DirtyRatio && db.Due && db.DirtyRatio > dc.DirtyRatio) {
		t.Fatalf("the set-up is not what the test needs: a %+v, b %+v, c %+v", da, db, dc)
	}
	var dc segment.Dirtiness
	calls := hookCompact(c.node(1), func(key tp, o segment.CompactOptions) (segment.CompactResult, error) {
		switch key {
		case a:
			produceKeyed(t, c, ck, 60, 5)
			dc = dirtiness(ck)
		case ck:
			produceKeyed(t, c, a, 120, 5)
		}
		return segment.CompactResult{}, nil
	})
	if s := b.CompactNow(context.Background()); s.Partitions != 3 || s.Err != nil {
		t.Fatalf("pass: %+v", s)
	}
	var order []tp
	for _, call := range *calls {
		order = append(order, call.key)
	}
	if db := dirtiness(bk); !(dc.DirtyRatio > db.DirtyRatio) {
		t.Fatalf("c, written during the pass, is not dirtier than b: c %+v, b %+v", dc, db)
	}
	if want := []tp{a, ck, bk}; !slices.Equal(order, want) {
		t.Fatalf("compacted %v, want %v", order, want)
	}
}

// BenchmarkCleanQueueTake measures a pick's cost over n partitions with
// real logs: the logMark of each one left, plus at most maxRerankPerPick
// Dirtiness calls when all of them moved ("moved": one batch appended to
// each before every pick, outside the timer). With "dirty" each log holds
// 24 records of 1 kB over 5 keys first, three sealed segments a pass would
// compact, so that Dirtiness reads a batch.
func BenchmarkCleanQueueTake(b *testing.B) {
	for _, bench := range []struct {
		n            int
		dirty, moved bool
	}{{100, false, false}, {100, false, true}, {100, true, true}, {1000, false, false}, {1000, false, true}} {
		b.Run(fmt.Sprintf("partitions=%d/dirty=%v/moved=%v", bench.n, bench.dirty, bench.moved), func(b *testing.B) {
			br := compactedPartitions(b, bench.n, bench.dirty)
			ctx := context.Background()
			for b.Loop() {
				b.StopTimer()
				tasks, _ := br.cleanerTasks(time.Now())
				q := &cleanQueue{left: tasks, rank: func(t *cleanTask) { br.rankTask(t, time.Now()) }, picks: 1}
				for _, t := range tasks {
					if !bench.moved {
						break
					}
					if _, err := t.p.log.Append(ctx, keyedBatch(segment.CodecNone, rec("k", "v")), 1); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
				if _, ok := q.take(); !ok {
					b.Fatal("nothing to take")
				}
			}
		})
	}
}

// compactedPartitions returns a one-node cluster's broker hosting n
// compacted partitions, each holding 24 records of 1 kB over 5 keys when
// dirty.
func compactedPartitions(b *testing.B, n int, dirty bool) *Broker {
	c := newTestCluster(b, clusterOptions{nodes: 1, segBytes: retentionSegBytes, cleanerInterval: -1})
	for i := range n {
		k := tp{"payments", int32(i)}
		c.createPartition(k.topic, k.partition, []int32{1}, 1, 1)
		c.setCleanup(k, CleanupCompact, CompactionConfig{MinDirtyRatio: 0, DeleteRetention: time.Hour})
		for j := range 24 {
			if !dirty {
				break
			}
			batch := keyedBatch(segment.CodecNone, rec(fmt.Sprint("k", j%5), fmt.Sprint(j, bigValue)))
			if r, err := c.produce(context.Background(), k, wire.AcksAll, batch); err != nil || r.Err != wire.None {
				b.Fatalf("produce to %s: %+v, %v", k, r, err)
			}
		}
	}
	return c.node(1).b
}
