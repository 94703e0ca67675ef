package raftnode

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"paymentlog/segment"
)

// benchCluster starts three voters on the in-memory network whose metadata
// logs are segment logs on the real file system with fsync on (the
// production durability), and elects node 1.
func benchCluster(b *testing.B) *testCluster {
	b.Helper()
	c := newTestCluster(b, 3, nil)
	root := b.TempDir()
	for id := range c.voters {
		c.sms[id] = &testSM{}
		cfg := c.config(id)
		cfg.log, cfg.files, cfg.hooks = nil, nil, nil
		cfg.FS, cfg.DataDir, cfg.NoSync = segment.OSFS{}, fmt.Sprintf("%s/%d", root, id), false
		n, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		c.nodes[id] = n
	}
	// Campaign is ignored until the bootstrap conf changes are applied: retry.
	deadline := time.Now().Add(10 * time.Second)
	for !c.nodes[1].Status().IsLeader {
		if time.Now().After(deadline) {
			b.Fatal("no leader")
		}
		if err := c.nodes[1].Campaign(context.Background()); err != nil {
			b.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

// baselineFsync measures one 100-byte segment append plus its fsync: the
// floor under any durable commit.
func baselineFsync(b *testing.B, n int) time.Duration {
	b.Helper()
	l, err := segment.Open(context.Background(), b.TempDir(), segment.Options{SegmentBytes: 8 << 20, InitialOffset: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	bl := segment.NewBuilder(segment.BuilderOptions{})
	payload := make([]byte, 100)
	start := time.Now()
	for range n {
		bl.Reset(segment.BuilderOptions{})
		bl.Add(0, nil, payload, nil)
		if _, err := l.Append(context.Background(), bl.Build(), 1); err != nil {
			b.Fatal(err)
		}
		if err := l.WaitDurable(context.Background(), l.LogEndOffset()); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// BenchmarkPropose measures Propose (committed on a quorum with fsync, and
// applied on the leader) one at a time and from 32 goroutines, and reports
// each against a single local append+fsync measured in the same run
// (x_fsync: 1.0 would be a commit as cheap as one local fsync).
func BenchmarkPropose(b *testing.B) {
	requireSegment(b)
	payload := make([]byte, 100)
	b.Run("sequential", func(b *testing.B) {
		c := benchCluster(b)
		base := baselineFsync(b, 200)
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.nodes[1].Propose(ctx, payload); err != nil {
				b.Fatal(err)
			}
		}
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(float64(per)/float64(base), "x_fsync")
	})
	b.Run("parallel32", func(b *testing.B) {
		c := benchCluster(b)
		base := baselineFsync(b, 200)
		ctx := context.Background()
		b.ResetTimer()
		var wg sync.WaitGroup
		per := (b.N + 31) / 32
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range per {
					if _, err := c.nodes[1].Propose(ctx, payload); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		op := b.Elapsed() / time.Duration(per*32)
		b.ReportMetric(float64(op)/float64(base), "x_fsync")
	})
}
