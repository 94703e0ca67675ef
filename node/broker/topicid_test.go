package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestTopicRecreatedWhileNodeDown: a topic is deleted and re-created under
// the same name while a replica's node is down. When the node comes back,
// the directory it finds holds the old topic's records and HW: the new
// topic's replica must start empty, not serve (or keep, as a follower,
// below the epochs it shares with the new leader) the old records.
func TestTopicRecreatedWhileNodeDown(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"old-0", "old-1"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	dir := c.node(1).dir
	c.stopNode(1)
	// Deleted and re-created meanwhile: a new topic id, epochs from 1 again.
	c.mu.Lock()
	c.parts[testKey].TopicID = "id-payments-recreated"
	c.mu.Unlock()
	c.startNode(1, dir)
	c.push(testKey)
	hw, start, leo, ok := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
	if !ok || hw != 0 || start != 0 || leo != 0 {
		t.Fatalf("re-created topic's replica: hw %d, log [%d, %d) (open %v); want an empty log", hw, start, leo, ok)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"new-0"})); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("produce: %+v", r)
	}
	got := readAll(t, c.node(1).b.partition(testKey.topic, testKey.partition).log, 1)
	if fmt.Sprint(got) != fmt.Sprint(map[int64]string{0: "new-0"}) {
		t.Fatalf("log %v", got)
	}
	// Restarting with the same topic keeps the data.
	c.stopNode(1)
	c.startNode(1, dir)
	c.push(testKey)
	if hw, _, leo, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition); hw != 1 || leo != 1 {
		t.Fatalf("after a restart: hw %d, leo %d; want 1, 1", hw, leo)
	}
}

// TestParkedProduceWhenTopicDeletedOrRecreated: an acks=all produce waits
// for the HW when the partition is deleted, or re-created under the same
// name (a new topic id): it is answered with a retriable error at once,
// never acknowledged, and the new topic's replica starts empty.
func TestParkedProduceWhenTopicDeletedOrRecreated(t *testing.T) {
	for _, recreate := range []bool{false, true} {
		t.Run(map[bool]string{false: "deleted", true: "recreated"}[recreate], func(t *testing.T) {
			c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, maxWait: 20 * time.Millisecond})
			c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
			if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
				t.Fatalf("produce: %+v", r)
			}
			waitInSync(t, c, testKey)
			// Node 2 cannot flush b: the HW stays below it.
			gate := gateSyncs(t, c.node(2).fs, "payments-0")
			gate.arm()
			done := make(chan wire.ProducePartitionResponse, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				r, err := c.produce(ctx, testKey, wire.AcksAll, buildBatch(-1, -1, []string{"b"}))
				if err != nil {
					r.Err, r.Message = wire.Unknown, err.Error()
				}
				done <- r
			}()
			gate.waitBlocked(t, "node 2 never flushed b")
			n1 := c.node(1)
			waitFor(t, "b parked on node 1", 10*time.Second, func() bool {
				p := n1.b.partition(testKey.topic, testKey.partition)
				p.mu.Lock()
				defer p.mu.Unlock()
				return p.mu.r.Parked() == 1
			})
			if recreate {
				st := c.state(testKey)
				st.TopicID = "id-payments-recreated"
				if err := n1.b.ApplyPartition(c.ctx, st); err != nil {
					t.Fatal(err)
				}
			} else if err := n1.b.StopPartition(c.ctx, testKey.topic, testKey.partition, true); err != nil {
				t.Fatal(err)
			}
			var r wire.ProducePartitionResponse
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the parked produce was not answered")
			}
			if r.Err == wire.None || !r.Err.Retriable() {
				t.Fatalf("b answered %+v, want a retriable error", r)
			}
			if recreate {
				if hw, start, leo, ok := n1.b.PartitionInfo(testKey.topic, testKey.partition); !ok || hw != 0 || start != 0 || leo != 0 {
					t.Fatalf("re-created replica: hw %d, log [%d, %d) (open %v)", hw, start, leo, ok)
				}
			}
			gate.open()
		})
	}
}
