package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
	"paymentlog/segment"
)

// TestLeaderStorageFailureMovesLeadership: a failed fsync on a partition
// leader stops its node (Done, naming the partition). Once it has shut down
// as `paymentlog node start` does on Done, writes resume on an in-sync
// replica, every record is acknowledged once, and each acknowledged record
// is read back at its offset.
func TestLeaderStorageFailureMovesLeadership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	fss := map[int32]*segment.MemFS{1: segment.NewMemFS(), 2: segment.NewMemFS(), 3: segment.NewMemFS()}
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) { cfg.LogFS = fss[cfg.ID] })
	tc.waitAlive(3)
	c := tc.client(ctx)
	if _, err := c.Admin().CreateTopic(ctx, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2}); err != nil {
		t.Fatal(err)
	}
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	const total = 400
	type ack struct {
		off int64
		err error
	}
	acks := make([]ack, total)
	var wg sync.WaitGroup
	produce := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			err := p.Produce(ctx, &client.Record{Topic: "payments", Value: []byte(fmt.Sprintf("payment-%d", i))}, func(d client.Delivery) {
				acks[i] = ack{d.Offset, d.Err}
				wg.Done()
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, total/2)
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	part, _ := tc.image().Partition("payments", 0)
	leader := part.Leader
	fss[leader].SetFault(func(op segment.FaultOp, path string) error {
		if op == segment.OpSync && strings.HasSuffix(path, ".log") {
			return syscall.EIO
		}
		return nil
	})
	produce(total/2, total)

	failed := tc.node(leader)
	select {
	case <-failed.Done():
	case <-ctx.Done():
		t.Fatalf("node %d kept running with a failed partition log", leader)
	}
	if err := failed.Err(); err == nil || !strings.Contains(err.Error(), "payments-0") {
		t.Fatalf("node %d stopped with %v, want the failed partition log named", leader, err)
	}
	tc.mu.Lock()
	delete(tc.nodes, leader)
	tc.mu.Unlock()
	if err := failed.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	byOffset := map[int64]string{}
	for i, a := range acks {
		if a.err != nil {
			t.Fatalf("record %d not acknowledged: %v", i, a.err)
		}
		if prev, dup := byOffset[a.off]; dup {
			t.Fatalf("offset %d acknowledged for %q and payment-%d", a.off, prev, i)
		}
		byOffset[a.off] = fmt.Sprintf("payment-%d", i)
	}
	now, _ := tc.image().Partition("payments", 0)
	if now.Leader == leader {
		t.Fatalf("node %d still leads after stopping", leader)
	}
	cons := tc.client(ctx).NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, 0)
	seen := map[int64]string{}
	for next := int64(0); len(seen) < total; {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d records: %v", len(seen), err)
		}
		for _, m := range msgs {
			if m.Offset != next {
				t.Fatalf("consumer read offset %d, want %d", m.Offset, next)
			}
			next++
			seen[m.Offset] = string(m.Value)
		}
	}
	for off, v := range byOffset {
		if seen[off] != v {
			t.Fatalf("offset %d holds %q, acknowledged %q", off, seen[off], v)
		}
	}
	t.Logf("node %d stopped (%v); node %d leads; %d records acknowledged once each", leader, failed.Err(), now.Leader, total)
}
