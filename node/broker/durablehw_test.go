package broker

import (
	"context"
	"testing"
	"time"

	"paymentlog/wire"
)

// TestLeaderHWCoversOnlyItsDurableRecords: a leader alone in the ISR (min
// ISR 1) appends a batch and is still flushing it (fsync always). The HW
// must not pass the batch before the flush: consumers would read a record
// that a crash of the leader takes back, and the offset would later hold
// another record.
func TestLeaderHWCoversOnlyItsDurableRecords(t *testing.T) {
	for _, acks := range []int8{wire.AcksLeader, wire.AcksNone} {
		t.Run(map[int8]string{wire.AcksLeader: "acks=1", wire.AcksNone: "acks=0"}[acks], func(t *testing.T) {
			c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, maxWait: 20 * time.Millisecond})
			c.createPartition("payments", 0, []int32{1}, 1, 1)
			if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
				t.Fatalf("produce: %+v", r)
			}
			gate := gateSyncs(t, c.node(1).fs, "payments-0")
			gate.arm()
			done := make(chan wire.ProducePartitionResponse, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				r, err := c.produce(ctx, testKey, acks, buildBatch(-1, -1, []string{"b"}))
				if err != nil {
					r.Err, r.Message = wire.Unknown, err.Error()
				}
				done <- r
			}()
			gate.waitBlocked(t, "node 1 never flushed b")
			waitFor(t, "b appended", 10*time.Second, func() bool {
				_, _, leo, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
				return leo == 2
			})
			if hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition); hw != 1 {
				t.Fatalf("HW %d passes b, which is not durable (the log after a crash: %v)",
					hw, crashedLog(t, c, 1, c.node(1).fs.CrashClone()))
			}
			gate.open()
			if r := <-done; r.Err != wire.None || r.BaseOffset != 1 {
				t.Fatalf("produce b: %+v", r)
			}
			waitFor(t, "the HW passes b once durable", 10*time.Second, func() bool {
				hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
				return hw == 2
			})
		})
	}
}

// TestNewLeaderHWCoversOnlyItsDurableRecords: a follower has appended a
// batch and is still flushing it when it becomes the leader, alone in the
// ISR. Its HW must not pass the batch before the flush.
func TestNewLeaderHWCoversOnlyItsDurableRecords(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)
	fs2 := c.node(2).fs
	gate := gateSyncs(t, fs2, "payments-0")
	gate.arm()
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"b"})); r.Err != wire.None {
		t.Fatalf("acks=1 produce: %+v", r)
	}
	gate.waitBlocked(t, "node 2 never flushed b")
	waitFor(t, "node 2 appended b", 10*time.Second, func() bool {
		return c.node(2).b.partition(testKey.topic, testKey.partition).log.LogEndOffset() == 2
	})
	// Node 1 goes away; node 2 leads, alone in the ISR.
	if l := c.elect(testKey, 1); l != 2 {
		t.Fatalf("elected %d, want 2", l)
	}
	if hw, _, _, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition); hw > 1 {
		t.Fatalf("node 2's HW is %d while its copy of b is not durable (its log after a crash: %v)",
			hw, crashedLog(t, c, 2, fs2.CrashClone()))
	}
	gate.open()
	waitFor(t, "node 2's HW passes b once durable", 10*time.Second, func() bool {
		hw, _, _, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw == 2
	})
}
