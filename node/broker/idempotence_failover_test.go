package broker

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

// Idempotent production across leader changes, truncation and restarts
// (KIP-98 producer state): a retry of a batch some leader appended gets the
// offsets that batch has in the current leader's log, a retry of a batch the
// current leader's log does not hold is appended exactly once, and every
// replica holding the same log remembers the same producer state.

// produceBatchTo sends batch to node id as leader of epoch and returns the
// partition's answer (errors in it are the caller's to judge).
func produceBatchTo(t *testing.T, c *testCluster, id, epoch int32, acks int8, batch []byte) wire.ProducePartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.ProduceResponse
	err := c.client.Call(ctx, c.node(id).addr, wire.TypeProduce, wire.ProduceRequest{Acks: acks, TimeoutMs: 5000,
		Topic: testKey.topic, Parts: []wire.ProducePartition{{Partition: testKey.partition, LeaderEpoch: epoch,
			Batch: slices.Clone(batch)}}}, &resp)
	if err != nil {
		t.Fatalf("produce to %d: %v", id, err)
	}
	return resp.Parts[0]
}

// electNode moves leadership to ISR member id (new leader epoch).
func (c *testCluster) electNode(key tp, id int32) {
	c.t.Helper()
	c.mu.Lock()
	st := c.parts[key]
	if !slices.Contains(st.ISR, id) || c.nodes[id] == nil {
		c.mu.Unlock()
		c.t.Fatalf("node %d is not a live ISR member (ISR %v)", id, st.ISR)
	}
	st.Leader = id
	st.LeaderEpoch++
	st.PartitionEpoch++
	c.mu.Unlock()
	c.push(key)
}

// setLeader makes id the leader with the given ISR in a new leader epoch,
// as the controller would after an election (the tests use it to hand
// leadership to a replica the ISR does not hold, e.g. an unclean election,
// or to name a new ISR with the new leader).
func (c *testCluster) setLeader(key tp, id int32, isr ...int32) {
	c.t.Helper()
	c.mu.Lock()
	st := c.parts[key]
	st.Leader, st.LeaderEpoch, st.PartitionEpoch, st.ISR = id, st.LeaderEpoch+1, st.PartitionEpoch+1, isr
	c.mu.Unlock()
	c.push(key)
}

// waitLEO waits until node id's replica of the test partition ends at leo.
func waitLEO(t *testing.T, c *testCluster, id int32, leo int64, what string) {
	t.Helper()
	waitFor(t, what, 10*time.Second, func() bool {
		_, _, end, ok := c.node(id).b.PartitionInfo(testKey.topic, testKey.partition)
		return ok && end == leo
	})
}

// wantOffset asserts a successful answer at base.
func wantOffset(t *testing.T, what string, r wire.ProducePartitionResponse, base int64) {
	t.Helper()
	if r.Err != wire.None || r.BaseOffset != base {
		t.Fatalf("%s: %v (%s) at offset %d, want success at %d", what, r.Err, r.Message, r.BaseOffset, base)
	}
}

// producerStateOf renders a replica's producer state (appendMu taken).
func producerStateOf(n *testNode) string {
	p := n.b.partition(testKey.topic, testKey.partition)
	if p == nil {
		return "<no partition>"
	}
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	pids := make([]int64, 0, len(p.producers.producers))
	for pid := range p.producers.producers {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	s := ""
	for _, pid := range pids {
		e := p.producers.producers[pid]
		s += fmt.Sprintf("pid %d epoch %d %v; ", pid, e.epoch, e.batches)
	}
	return s
}

// wantSameProducerState waits until every live replica is in sync and then
// checks that they all remember the same batches: each would answer a retry
// the same way.
func wantSameProducerState(t *testing.T, c *testCluster) {
	t.Helper()
	waitInSync(t, c, testKey)
	nodes := c.liveNodes()
	want := producerStateOf(nodes[0])
	for _, n := range nodes[1:] {
		if got := producerStateOf(n); got != want {
			t.Fatalf("producer state differs:\nnode %d: %s\nnode %d: %s", nodes[0].id, want, n.id, got)
		}
	}
}

// TestIdempotentRetriesOnNewLeaderGetOriginalOffsets: five batches of one
// producer (the most a producer has unresolved) are appended and replicated
// by node 1, whose answers are lost; node 1 dies. Their retries reach the new
// leader in reverse order: each is answered with its original offsets, none
// is written again, and the next batch follows on. The dead leader restarts
// (a crash keeping only synced bytes), catches up and leads again: its
// rebuilt state answers the same retries the same way.
func TestIdempotentRetriesOnNewLeaderGetOriginalOffsets(t *testing.T) {
	c := newTestCluster(t, clusterOptions{memFS: true, maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	const pid = 77
	var batches [][]byte
	for i := range 5 {
		b := buildBatch(pid, int32(2*i), []string{fmt.Sprintf("pay-%d-a", i), fmt.Sprintf("pay-%d-b", i)})
		batches = append(batches, b)
		wantOffset(t, fmt.Sprintf("batch %d", i), mustProduce(t, c, wire.AcksAll, b), int64(2*i))
	}
	waitInSync(t, c, testKey)
	dir1 := c.node(1).dir
	fs1 := c.crashNode(1)
	if l := c.elect(testKey, 1); l != 2 {
		t.Fatalf("elected %d", l)
	}
	for i := 4; i >= 0; i-- {
		wantOffset(t, fmt.Sprintf("retry %d on node 2", i), mustProduce(t, c, wire.AcksAll, batches[i]), int64(2*i))
	}
	wantOffset(t, "next batch", mustProduce(t, c, wire.AcksAll, buildBatch(pid, 10, []string{"pay-5"})), 10)

	c.startNodeFS(1, dir1, fs1)
	c.push(testKey)
	waitFor(t, "node 1 back in the ISR", 20*time.Second, func() bool { return slices.Contains(c.state(testKey).ISR, 1) })
	wantSameProducerState(t, c)
	c.electNode(testKey, 1)
	for i := 4; i >= 1; i-- { // the window holds the last five: batches 1-4 and the next one
		wantOffset(t, fmt.Sprintf("retry %d on node 1", i), mustProduce(t, c, wire.AcksAll, batches[i]), int64(2*i))
	}
	wantOffset(t, "retry of the next batch on node 1", mustProduce(t, c, wire.AcksAll, buildBatch(pid, 10, []string{"pay-5"})), 10)
	if r := mustProduce(t, c, wire.AcksAll, batches[0]); r.Err != wire.OutOfOrderSequence {
		t.Fatalf("a retry older than the window: %v at %d, want OutOfOrderSequence", r.Err, r.BaseOffset)
	}
	waitInSync(t, c, testKey)
	got := readAll(t, c.node(1).b.partition("payments", 0).log, 11)
	if len(got) != 11 || got[10] != "pay-5" || got[9] != "pay-4-b" {
		t.Fatalf("log %v", got)
	}
	wantSameProducerState(t, c)
}

// divergedProducer builds a 2-node partition where producer pid wrote
// batches 0, 1 and 2 (one record each, sequences 0-2) to node 1 in epoch 1,
// only batch 0 reaching node 2. Node 1 then loses the leadership to node 2
// (epoch 2, ISR {2}) without restarting: it follows node 2 and truncates
// batches 1 and 2. It returns the three batches.
func divergedProducer(t *testing.T, pid int64) (*testCluster, [][]byte) {
	t.Helper()
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	batches := [][]byte{buildBatch(pid, 0, []string{"p0"}), buildBatch(pid, 1, []string{"p1"}), buildBatch(pid, 2, []string{"p2"})}
	wantOffset(t, "batch 0", mustProduce(t, c, wire.AcksAll, batches[0]), 0)
	waitInSync(t, c, testKey)
	dir2 := c.node(2).dir
	c.stopNode(2)
	wantOffset(t, "batch 1 (acks=1)", produceBatchTo(t, c, 1, 1, wire.AcksLeader, batches[1]), 1)
	wantOffset(t, "batch 2 (acks=1)", produceBatchTo(t, c, 1, 1, wire.AcksLeader, batches[2]), 2)
	c.startNode(2, dir2)
	c.setLeader(testKey, 2, 2)
	waitLEO(t, c, 1, 1, "node 1 truncated")
	return c, batches
}

// TestIdempotentStateRolledBackOnTruncation: after node 1 truncated batches
// 1 and 2, another producer's record takes offset 1 on node 2 and node 1
// copies it. Node 1 leads again: the retry of batch 1 must be appended (at
// 2), not answered as a duplicate at offset 1, which its truncated log once
// gave batch 1 and which now holds the other record.
func TestIdempotentStateRolledBackOnTruncation(t *testing.T) {
	c, batches := divergedProducer(t, 5)
	wantOffset(t, "other producer on node 2", mustProduce(t, c, wire.AcksAll, buildBatch(6, 0, []string{"other"})), 1)
	waitFor(t, "node 1 back in the ISR", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 2 })
	wantSameProducerState(t, c)
	if l := c.elect(testKey, -1); l != 1 {
		t.Fatalf("elected %d", l)
	}
	wantOffset(t, "retry of batch 1 on node 1", mustProduce(t, c, wire.AcksAll, batches[1]), 2)
	wantOffset(t, "retry of batch 2 on node 1", mustProduce(t, c, wire.AcksAll, batches[2]), 3)
	wantOffset(t, "second retry of batch 1", mustProduce(t, c, wire.AcksAll, batches[1]), 2)
	waitInSync(t, c, testKey)
	for _, n := range c.liveNodes() {
		got := readAll(t, n.b.partition("payments", 0).log, 4)
		if want := map[int64]string{0: "p0", 1: "other", 2: "p1", 3: "p2"}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("node %d log %v, want %v", n.id, got, want)
		}
	}
	wantSameProducerState(t, c)
}

// TestIdempotentRetryMissingOnNewLeaderIsAppendedOnce: the new leader's log
// lacks batches 1 and 2 (node 1's copies were truncated away). Their retries
// arrive out of order: batch 2 first is refused as out of order (retriable:
// batch 1 is still coming), then batch 1 and batch 2 are appended once each,
// and further retries of either are duplicates at those offsets, on node 2
// and, after it leads again, on node 1.
func TestIdempotentRetryMissingOnNewLeaderIsAppendedOnce(t *testing.T) {
	c, batches := divergedProducer(t, 9)
	if r := mustProduce(t, c, wire.AcksAll, batches[2]); r.Err != wire.OutOfOrderSequence {
		t.Fatalf("batch 2 before batch 1: %v at %d, want OutOfOrderSequence", r.Err, r.BaseOffset)
	}
	wantOffset(t, "retry of batch 1", mustProduce(t, c, wire.AcksAll, batches[1]), 1)
	wantOffset(t, "retry of batch 2", mustProduce(t, c, wire.AcksAll, batches[2]), 2)
	wantOffset(t, "second retry of batch 2", mustProduce(t, c, wire.AcksAll, batches[2]), 2)
	wantOffset(t, "second retry of batch 1", mustProduce(t, c, wire.AcksAll, batches[1]), 1)
	waitFor(t, "node 1 back in the ISR", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 2 })
	wantSameProducerState(t, c)
	if l := c.elect(testKey, -1); l != 1 {
		t.Fatalf("elected %d", l)
	}
	wantOffset(t, "retry of batch 1 on node 1", mustProduce(t, c, wire.AcksAll, batches[1]), 1)
	wantOffset(t, "retry of batch 2 on node 1", mustProduce(t, c, wire.AcksAll, batches[2]), 2)
	wantOffset(t, "next batch on node 1", mustProduce(t, c, wire.AcksAll, buildBatch(9, 3, []string{"p3"})), 3)
	waitInSync(t, c, testKey)
	got := readAll(t, c.node(2).b.partition("payments", 0).log, 4)
	if want := map[int64]string{0: "p0", 1: "p1", 2: "p2", 3: "p3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("log %v, want %v", got, want)
	}
	wantSameProducerState(t, c)
}

// TestFollowerTruncationDoesNotReplayTheLog: a follower that truncates a
// divergent tail rolls its producer state back without reading its log
// again. It used to replay every batch header from the log start under the
// partition's append lock, on the fetcher goroutine shared by every
// partition it follows from that leader: on a log of gigabytes that stalled
// their replication for seconds (about 1.4 s per GiB of small batches with
// the pages cached), long enough for their leaders to drop this follower
// from their ISRs right after a failover. The rolled-back state must still
// be the one a replay would give: the retry of a truncated batch is
// appended once and then answered as a duplicate, on either replica.
func TestFollowerTruncationDoesNotReplayTheLog(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	const committed = 200
	for i := range committed {
		wantOffset(t, "committed batch", mustProduce(t, c, wire.AcksAll, buildBatch(int64(1+i%7), int32(i/7), []string{"c"})), int64(i))
	}
	waitInSync(t, c, testKey)
	dir2 := c.node(2).dir
	c.stopNode(2)
	lost := buildBatch(3, committed/7+1, []string{"lost"})
	wantOffset(t, "uncommitted batch (acks=1)", produceBatchTo(t, c, 1, 1, wire.AcksLeader, lost), committed)
	before := c.node(1).b.counters.producerReplayBatches.Load()
	c.startNode(2, dir2)
	c.setLeader(testKey, 2, 2)
	waitLEO(t, c, 1, committed, "node 1 truncated")
	if n := c.node(1).b.counters.producerReplayBatches.Load() - before; n >= committed/2 {
		t.Errorf("the truncation replayed %d batch headers of a %d-batch log", n, committed)
	}
	wantOffset(t, "retry of the truncated batch on node 2", mustProduce(t, c, wire.AcksAll, lost), committed)
	waitFor(t, "node 1 back in the ISR", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 2 })
	wantSameProducerState(t, c)
	c.electNode(testKey, 1)
	wantOffset(t, "second retry on node 1", mustProduce(t, c, wire.AcksAll, lost), committed)
	wantOffset(t, "next batch on node 1", mustProduce(t, c, wire.AcksAll, buildBatch(3, committed/7+2, []string{"next"})), committed+1)
	wantSameProducerState(t, c)
}

// TestCleanRestartDoesNotReplayTheLog: a partition closed cleanly reopens
// with its producer state from the snapshot written at the close and reads
// only the batches after it, not every batch header from the log start
// (which made a node's start take time in proportion to all its logs'
// bytes, about 1.4 s per GiB of small batches even with the pages cached).
// The state it starts with answers retries as before the restart, and is the
// same as the other replica's.
func TestCleanRestartDoesNotReplayTheLog(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	const committed = 200
	var batches [][]byte
	for i := range committed {
		b := buildBatch(int64(1+i%7), int32(i/7), []string{"c"})
		batches = append(batches, b)
		wantOffset(t, "batch", mustProduce(t, c, wire.AcksAll, b), int64(i))
	}
	waitInSync(t, c, testKey)
	dir2 := c.node(2).dir
	c.stopNode(2) // Broker.Close: a clean close of its logs
	n2 := c.startNode(2, dir2)
	c.push(testKey)
	if n := n2.b.counters.producerReplayBatches.Load(); n >= committed/2 {
		t.Errorf("reopening replayed %d batch headers of a %d-batch log", n, committed)
	}
	waitInSync(t, c, testKey)
	wantSameProducerState(t, c)
	c.electNode(testKey, 2)
	for i := committed - 7; i < committed; i++ { // the last batch of each producer
		wantOffset(t, "retry after the restart", mustProduce(t, c, wire.AcksAll, batches[i]), int64(i))
	}
	wantOffset(t, "next batch", mustProduce(t, c, wire.AcksAll, buildBatch(1, committed/7+1, []string{"n"})), committed)
	wantSameProducerState(t, c)
}

// TestCrashRestartReplaysOnlyRecentBatches: a node killed without closing
// its logs restarts from the producer snapshot it wrote while running (one
// per ProducerSnapshotBatches batches that became stable, or per
// ProducerSnapshotBytes the log grew) and replays only
// the batches after it; before, a crash left no snapshot and the restart
// replayed every batch header of every log. The state it starts with is the
// other replica's, and a retry of the last batch is still a duplicate.
func TestCrashRestartReplaysOnlyRecentBatches(t *testing.T) {
	// Paced by batches, or by bytes (the log's growth) with the batch
	// count out of reach.
	t.Run("batches", func(t *testing.T) { testCrashRestartReplay(t, 50, 0, true) })
	// Snapshots every 1 KiB of growth (~14 batches): the last one ends
	// within 50 batches of the end however the ticks fall.
	t.Run("bytes", func(t *testing.T) { testCrashRestartReplay(t, 1<<30, 1<<10, true) })
	// Without producer ids, snapshots end at the HW (snapshotEnd).
	t.Run("not idempotent", func(t *testing.T) { testCrashRestartReplay(t, 1<<30, 1<<10, false) })
}

func testCrashRestartReplay(t *testing.T, snapshotBatches int, snapshotBytes int64, idempotent bool) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, maxWait: 50 * time.Millisecond, lagTime: time.Minute,
		snapshotBatches: snapshotBatches, snapshotBytes: snapshotBytes})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	const committed = 200
	var last []byte
	for i := range committed {
		pid := int64(1 + i%7)
		if !idempotent {
			pid = 0
		}
		last = buildBatch(pid, int32(i/7), []string{"c"})
		wantOffset(t, "batch", mustProduce(t, c, wire.AcksAll, last), int64(i))
	}
	waitInSync(t, c, testKey)
	n2 := c.node(2)
	path := filepath.Join(n2.b.partition("payments", 0).dir, ProducerSnapshotFile)
	waitFor(t, "a producer snapshot of most of the log on node 2", 15*time.Second, func() bool {
		data, err := segment.ReadCheckpoint(n2.fs, path)
		if err != nil {
			return false
		}
		s, err := decodeProducerSnapshot(data)
		return err == nil && s.stableEnd >= committed-50
	})
	dir2 := n2.dir
	fs2 := c.crashNode(2)
	n2 = c.startNodeFS(2, dir2, fs2)
	c.push(testKey)
	if n := n2.b.counters.producerReplayBatches.Load(); n >= committed/2 {
		t.Errorf("the restart after a crash replayed %d batch headers of a %d-batch log", n, committed)
	}
	waitInSync(t, c, testKey)
	wantSameProducerState(t, c)
	if !idempotent {
		return
	}
	c.electNode(testKey, 2)
	wantOffset(t, "retry of the last batch after the crash", mustProduce(t, c, wire.AcksAll, last), committed-1)
	wantSameProducerState(t, c)
}

// TestFailedProducerReplayRefusesIdempotentWrites: node 1 wrote batch P of
// producer 5 at offset 0 (acks=1) alone; node 2, empty, leads, and node 1
// truncates its whole log, but replaying it into a new producer state fails
// (an unreadable log). Another producer's record then takes offset 0 on both.
// When node 1 leads again, the retry of P must not be answered from the
// state kept from before the truncation, as a duplicate at offset 0, which
// holds the other record (an acknowledged payment that is not in the log):
// idempotent writes are refused, retriably, until the partition is reopened.
func TestFailedProducerReplayRefusesIdempotentWrites(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, lagTime: time.Minute})
	c.stopNode(2)
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.setISR(testKey, 1)
	pay := buildBatch(5, 0, []string{"payment"})
	wantOffset(t, "payment (acks=1) on node 1 alone", mustProduce(t, c, wire.AcksLeader, pay), 0)
	failReplay := func() error { return errors.New("injected: log unreadable") }
	c.node(1).b.hooks.producerReplay.Store(&failReplay)
	c.startNode(2, t.TempDir())
	c.setLeader(testKey, 2, 2)
	waitLEO(t, c, 1, 0, "node 1 truncated")
	wantOffset(t, "other producer on node 2", mustProduce(t, c, wire.AcksAll, buildBatch(6, 0, []string{"other"})), 0)
	waitFor(t, "node 1 back in the ISR", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 2 })
	waitInSync(t, c, testKey)
	c.electNode(testKey, 1)
	r := mustProduce(t, c, wire.AcksAll, pay)
	if r.Err == wire.None {
		got := readAll(t, c.node(1).b.partition("payments", 0).log, r.BaseOffset+1)
		t.Fatalf("retry of the payment acknowledged at offset %d, which holds %q", r.BaseOffset, got[r.BaseOffset])
	}
	if !r.Err.Retriable() {
		t.Fatalf("retry of the payment: %v, want a retriable refusal", r.Err)
	}
	// Others are refused too (their state is as unknown), non-idempotent
	// writes are not.
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(6, 1, []string{"other-2"})); r.Err == wire.None {
		t.Fatalf("producer 6 accepted at %d with an unknown producer state", r.BaseOffset)
	}
	wantOffset(t, "non-idempotent record", mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"plain"})), 1)
}
