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

// TestLeaderHWAfterProduceTimedOutInFlush: an acks=1 produce gives up (its
// timeout) while it waits behind another request's stuck flush, which does
// not cover its batch. Nobody else writes. The HW must still pass the
// batch once the log can be flushed, not wait for a produce that may never
// come.
func TestLeaderHWAfterProduceTimedOutInFlush(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, memFS: true, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	gate := gateSyncs(t, c.node(1).fs, "payments-0")
	gate.arm()
	send := func(timeoutMs int32, val string) chan wire.ProducePartitionResponse {
		done := make(chan wire.ProducePartitionResponse, 1)
		go func() {
			var resp wire.ProduceResponse
			err := c.client.Call(context.Background(), c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{
				Acks: wire.AcksLeader, TimeoutMs: timeoutMs, Topic: testKey.topic, Parts: []wire.ProducePartition{{
					Partition: testKey.partition, LeaderEpoch: -1, Batch: buildBatch(-1, -1, []string{val})}}}, &resp)
			if err != nil {
				t.Error(err)
				resp.Parts = []wire.ProducePartitionResponse{{Err: wire.Unknown}}
			}
			done <- resp.Parts[0]
		}()
		return done
	}
	answer := func(done chan wire.ProducePartitionResponse) wire.ProducePartitionResponse {
		t.Helper()
		select {
		case r := <-done:
			return r
		case <-time.After(10 * time.Second):
			t.Fatal("no answer")
		}
		return wire.ProducePartitionResponse{}
	}
	b := send(30000, "b") // its flush (of offsets up to 2) is held
	gate.waitBlocked(t, "node 1 never flushed b")
	// c is appended at 2 and waits behind b's flush until its timeout.
	if r := answer(send(100, "c")); r.Err != wire.Timeout || r.BaseOffset != 2 {
		t.Fatalf("c answered %+v while b's flush is stuck, want Timeout at offset 2", r)
	}
	gate.open()
	if r := answer(b); r.Err != wire.None || r.BaseOffset != 1 {
		t.Fatalf("b: %+v", r)
	}
	waitFor(t, "the HW passes c", 10*time.Second, func() bool {
		hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw == 3
	})
}
