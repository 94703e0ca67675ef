package node_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/node"
)

// memberLog records what two group members read, per partition.
type memberLog struct {
	mu   sync.Mutex
	read map[int32]map[int64]int // partition -> offset -> times read
}

func (l *memberLog) add(msgs []client.Message) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		if l.read[m.Partition] == nil {
			l.read[m.Partition] = map[int64]int{}
		}
		l.read[m.Partition][m.Offset]++
	}
}

// covered reports whether every partition's offsets below perPartition
// were read at least once.
func (l *memberLog) covered(partitions int32, perPartition int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for p := range partitions {
		for o := range perPartition {
			if l.read[p][o] == 0 {
				return false
			}
		}
	}
	return true
}

// Two consumers join one group on a real cluster and split a topic's four
// partitions; the active controller is killed and the successor, knowing
// no member, takes them back with what they own; one member leaves and
// the other takes its partitions at the committed offsets. Every record is
// read at least once throughout.
func TestGroupMembersShareATopicThroughControllerFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tc := mustStartClusterWith(t, 3, func(cfg *node.Config) {
		cfg.GroupSessionTimeout, cfg.GroupHeartbeatInterval = 2*time.Second, 200*time.Millisecond
	})
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 4, ReplicationFactor: 3, MinISR: 2})
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	produced := int64(0) // per partition
	produce := func(n int64) {
		t.Helper()
		for i := range n * 4 {
			rec := &client.Record{Topic: "payments", Partition: int32(i % 4), PartitionSet: true, Value: fmt.Appendf(nil, "r%d", i)}
			if _, err := p.ProduceSync(ctx, rec); err != nil {
				t.Fatal(err)
			}
		}
		produced += n
	}
	produce(50)

	log := &memberLog{read: map[int32]map[int64]int{}}
	type member struct {
		gc   *client.GroupConsumer
		mu   sync.Mutex
		held int
		stop context.CancelFunc
		done chan struct{}
	}
	join := func() *member {
		t.Helper()
		mc := tc.client(ctx)
		gc, err := mc.NewGroupConsumer(ctx, client.GroupConsumerConfig{Group: "billing", Topics: []string{"payments"}, From: client.SeekBeginning})
		if err != nil {
			t.Fatal(err)
		}
		m := &member{gc: gc, done: make(chan struct{})}
		mctx, stop := context.WithCancel(ctx)
		m.stop = stop
		go func() {
			defer close(m.done)
			last := time.Now()
			for mctx.Err() == nil {
				msgs, err := gc.Poll(mctx)
				log.add(msgs)
				m.mu.Lock()
				m.held = len(gc.Assignment())
				m.mu.Unlock()
				if err != nil && mctx.Err() == nil {
					t.Logf("poll: %v", err)
				}
				if time.Since(last) > 200*time.Millisecond {
					cctx, ccancel := context.WithTimeout(mctx, 5*time.Second)
					if err := gc.Commit(cctx); err != nil && mctx.Err() == nil {
						t.Logf("commit: %v", err)
					}
					ccancel()
					last = time.Now()
				}
			}
		}()
		return m
	}
	holds := func(m *member) int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.held
	}
	a, b := join(), join()
	defer func() {
		for _, m := range []*member{a, b} {
			m.stop()
			<-m.done
		}
		b.gc.Close(ctx)
	}()
	waitFor(t, "the members split the partitions 2/2", 20*time.Second, func() bool { return holds(a) == 2 && holds(b) == 2 })
	waitFor(t, "the first records read", 20*time.Second, func() bool { return log.covered(4, produced) })

	tc.kill(tc.activeController())
	produce(50)
	waitFor(t, "the records written after the controller's death read", 30*time.Second, func() bool { return log.covered(4, produced) })
	waitFor(t, "the members keep 2 partitions each", 20*time.Second, func() bool { return holds(a) == 2 && holds(b) == 2 })

	a.stop()
	<-a.done
	if err := a.gc.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	produce(50)
	waitFor(t, "the remaining member holds all 4 partitions", 20*time.Second, func() bool { return holds(b) == 4 })
	waitFor(t, "every record read", 30*time.Second, func() bool { return log.covered(4, produced) })
}
