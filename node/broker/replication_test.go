package broker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/segment"
	"paymentlog/wire"
)

var testKey = tp{"payments", 0}

func mustProduce(t *testing.T, c *testCluster, acks int8, batch []byte) wire.ProducePartitionResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := c.produce(ctx, testKey, acks, batch)
	if err != nil {
		t.Fatalf("produce: %v", err)
	}
	return resp
}

// waitInSync waits until every live replica has the leader's log end and HW.
func waitInSync(t *testing.T, c *testCluster, key tp) {
	t.Helper()
	waitFor(t, "replicas in sync", 10*time.Second, func() bool {
		st := c.state(key)
		l := c.node(st.Leader)
		if l == nil {
			return false
		}
		hw, _, leo, ok := l.b.PartitionInfo(key.topic, key.partition)
		if !ok || hw != leo {
			return false
		}
		for _, n := range c.liveNodes() {
			fhw, _, fleo, ok := n.b.PartitionInfo(key.topic, key.partition)
			if !ok || fleo != leo || fhw != hw {
				return false
			}
		}
		return true
	})
}

func TestProduceAcksAllThenFetch(t *testing.T) {
	c := newTestCluster(t, clusterOptions{})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a", "b", "c"}))
	if r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("produce: %+v", r)
	}
	r = mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"d"}))
	if r.Err != wire.None || r.BaseOffset != 3 {
		t.Fatalf("produce: %+v", r)
	}
	// acks=all answered means the HW passed the batch on the leader.
	if hw, _, _, _ := c.node(1).b.PartitionInfo("payments", 0); hw < 4 {
		t.Fatalf("leader HW %d after acks=all", hw)
	}
	ctx := context.Background()
	f, err := c.fetch(ctx, testKey, 0, 0)
	if err != nil || f.Err != wire.None || f.HighWatermark != 4 || len(f.Records) == 0 {
		t.Fatalf("fetch: %+v %v", f, err)
	}
	// Fetch at the HW long-polls until data arrives.
	got := make(chan wire.FetchPartitionResponse, 1)
	go func() {
		f, _ := c.fetch(ctx, testKey, 4, 5*time.Second)
		got <- f
	}()
	mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"e"}))
	select {
	case f := <-got:
		if f.Err != wire.None || len(f.Records) == 0 {
			t.Fatalf("long-poll fetch: %+v", f)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("long-poll fetch not woken")
	}
	var lo wire.ListOffsetsResponse
	err = c.client.Call(ctx, c.node(1).addr, wire.TypeListOffsets, wire.ListOffsetsRequest{Topic: "payments",
		Parts: []wire.ListOffsetsPartition{{Partition: 0, Timestamp: wire.Earliest}, {Partition: 0, Timestamp: wire.Latest}}}, &lo)
	if err != nil || lo.Parts[0].Offset != 0 || lo.Parts[1].Offset != 5 {
		t.Fatalf("list offsets: %+v %v", lo, err)
	}
	err = c.client.Call(ctx, c.node(2).addr, wire.TypeListOffsets, wire.ListOffsetsRequest{Topic: "payments",
		Parts: []wire.ListOffsetsPartition{{Partition: 0, Timestamp: wire.Latest}}}, &lo)
	if err != nil || lo.Parts[0].Err != wire.NotLeader || lo.Parts[0].LeaderHint != 1 {
		t.Fatalf("list offsets on a follower: %+v %v", lo, err)
	}
	waitInSync(t, c, testKey)
	var dr wire.DescribeReplicaResponse
	err = c.client.Call(ctx, c.node(3).addr, wire.TypeDescribeReplica, wire.DescribeReplicaRequest{Topic: "payments"}, &dr)
	if err != nil || dr.LogEnd != 5 || dr.HighWatermark != 5 || dr.IsLeader || dr.LeaderEpoch != 1 {
		t.Fatalf("describe replica: %+v %v", dr, err)
	}
	want := logBytes(t, c.node(1).b.partition("payments", 0).log, 5)
	for _, id := range []int32{2, 3} {
		if got := logBytes(t, c.node(id).b.partition("payments", 0).log, 5); !bytes.Equal(got, want) {
			t.Fatalf("replica %d differs from the leader", id)
		}
	}
}

func TestProduceErrors(t *testing.T) {
	c := newTestCluster(t, clusterOptions{})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	ctx := context.Background()

	// Corrupt batch: CRC mismatch.
	b := buildBatch(-1, -1, []string{"x"})
	b[len(b)-1] ^= 0xff
	if r := mustProduce(t, c, wire.AcksAll, b); r.Err != wire.CorruptMessage {
		t.Fatalf("corrupt batch: %+v", r)
	}
	// To a follower: NotLeader with the leader hint.
	var resp wire.ProduceResponse
	err := c.client.Call(ctx, c.node(2).addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksAll, Topic: "payments",
		Parts: []wire.ProducePartition{{Partition: 0, LeaderEpoch: -1, Batch: buildBatch(-1, -1, []string{"x"})}}}, &resp)
	if err != nil || resp.Parts[0].Err != wire.NotLeader || resp.Parts[0].LeaderHint != 1 {
		t.Fatalf("produce to follower: %+v %v", resp, err)
	}
	// Stale and future leader epochs.
	for _, tc := range []struct {
		epoch int32
		want  wire.ErrorCode
	}{{0, wire.FencedLeaderEpoch}, {7, wire.UnknownLeaderEpoch}} {
		err := c.client.Call(ctx, c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksAll, Topic: "payments",
			Parts: []wire.ProducePartition{{Partition: 0, LeaderEpoch: tc.epoch, Batch: buildBatch(-1, -1, []string{"x"})}}}, &resp)
		if err != nil || resp.Parts[0].Err != tc.want {
			t.Fatalf("epoch %d: %+v %v", tc.epoch, resp, err)
		}
	}
	// Unknown partition.
	err = c.client.Call(ctx, c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{Acks: wire.AcksAll, Topic: "nope",
		Parts: []wire.ProducePartition{{Partition: 0, LeaderEpoch: -1, Batch: buildBatch(-1, -1, []string{"x"})}}}, &resp)
	if err != nil || resp.Parts[0].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("unknown partition: %+v %v", resp, err)
	}
	// A fenced broker refuses writes at once.
	c.node(1).b.SetFenced(true)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"x"})); r.Err != wire.NotLeader {
		t.Fatalf("fenced: %+v", r)
	}
	c.node(1).b.SetFenced(false)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"x"})); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("unfenced: %+v", r)
	}
}

func TestIdempotentProducer(t *testing.T) {
	c := newTestCluster(t, clusterOptions{})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	first := buildBatch(42, 0, []string{"p0", "p1"})
	r := mustProduce(t, c, wire.AcksAll, first)
	if r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("first: %+v", r)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"other"})); r.BaseOffset != 2 {
		t.Fatalf("other: %+v", r)
	}
	// A retry (lost ack) gets its original offset, no error.
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(42, 0, []string{"p0", "p1"})); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("retry: %+v", r)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(42, 5, []string{"gap"})); r.Err != wire.OutOfOrderSequence {
		t.Fatalf("gap: %+v", r)
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(42, 2, []string{"p2"})); r.Err != wire.None || r.BaseOffset != 3 {
		t.Fatalf("next: %+v", r)
	}
	// The state survives a leader change (followers track it from the
	// batches they copy).
	waitInSync(t, c, testKey)
	if l := c.elect(testKey, -1); l < 0 {
		t.Fatal("no new leader")
	}
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(42, 2, []string{"p2"})); r.Err != wire.None || r.BaseOffset != 3 {
		t.Fatalf("retry on new leader: %+v", r)
	}
	// ... and a restart (rebuilt from batch headers).
	st := c.state(testKey)
	dir := c.node(st.Leader).dir
	c.stopNode(st.Leader)
	c.startNode(st.Leader, dir)
	c.push(testKey)
	waitInSync(t, c, testKey)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(42, 2, []string{"p2"})); r.Err != wire.None || r.BaseOffset != 3 {
		t.Fatalf("retry after restart: %+v", r)
	}
}

func TestNotEnoughReplicasAfterShrink(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, lagTime: 300 * time.Millisecond, maxWait: 50 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	// The metrics an operator alerts on follow the ISR (Broker.Stats).
	if st, f := c.node(1).b.Stats(), c.node(2).b.Stats(); st.Leaders != 1 || st.Followers != 0 || st.UnderReplicated != 0 ||
		st.UnderMinISR != 0 || st.ProduceRequests != 1 || st.ProduceBytes == 0 || st.ReplicaFetchResponses == 0 || f.Followers != 1 {
		t.Fatalf("stats in sync: leader %+v, follower %+v", st, f)
	}
	c.stopNode(2)
	// The leader proposes removing node 2 once it lags; acks=all is then refused.
	waitFor(t, "ISR shrink", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 1 })
	waitFor(t, "leader sees the shrink", 5*time.Second, func() bool {
		r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"b"}))
		return r.Err == wire.NotEnoughReplicas
	})
	if st := c.node(1).b.Stats(); st.UnderReplicated != 1 || st.UnderMinISR != 1 {
		t.Fatalf("stats after the shrink: %+v", st)
	}
	// acks=1 is still appended.
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"c"})); r.Err != wire.None {
		t.Fatalf("acks=1: %+v", r)
	}
	// Node 2 returns, catches up and is re-admitted; acks=all works again.
	c.startNode(2, t.TempDir())
	c.push(testKey)
	waitFor(t, "ISR expansion", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 2 })
	waitFor(t, "leader stats back in sync", 5*time.Second, func() bool {
		st := c.node(1).b.Stats()
		return st.UnderReplicated == 0 && st.UnderMinISR == 0
	})
	waitFor(t, "acks=all accepted", 5*time.Second, func() bool {
		return mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"d"})).Err == wire.None
	})
}

// TestFollowerTruncatesDivergentTail: node 1 leads epoch 1 alone and appends
// three records; it goes away and node 2, empty, leads epoch 2 (as an unclean
// election would) and writes three other records at the same offsets. Node 1
// returns as a follower: the leader knows no epoch as old as node 1's, so
// node 1 discards its log and copies node 2's.
func TestFollowerTruncatesDivergentTail(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2})
	dir1 := c.node(1).dir
	c.stopNode(2)
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.setISR(testKey, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"common"})); r.Err != wire.None {
		t.Fatalf("%+v", r)
	}
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"lost-1", "lost-2"})); r.Err != wire.None {
		t.Fatalf("%+v", r)
	}
	c.stopNode(1)
	c.startNode(2, t.TempDir())
	c.setLeader(testKey, 2, 2)
	for _, v := range []string{"new-0", "new-1", "new-2"} {
		if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{v})); r.Err != wire.None {
			t.Fatalf("%+v", r)
		}
	}
	c.startNode(1, dir1)
	c.push(testKey)
	waitFor(t, "node 1 re-admitted", 10*time.Second, func() bool { return len(c.state(testKey).ISR) == 2 })
	waitInSync(t, c, testKey)
	for _, id := range []int32{1, 2} {
		got := readAll(t, c.node(id).b.partition("payments", 0).log, 3)
		want := map[int64]string{0: "new-0", 1: "new-1", 2: "new-2"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("node %d log %v, want %v", id, got, want)
		}
	}
}

// TestLeaderChangesLoseNothing: 3 brokers, RF 3, min ISR 2, idempotent
// producers writing acks=all while the fake controller moves leadership
// between ISR members several times. Every acknowledged record is read back
// exactly once at the offset it was acknowledged with, no record appears
// twice, and the replicas are byte-equal below the HW.
func TestLeaderChangesLoseNothing(t *testing.T) {
	runLossTest(t, lossTest{producers: 4, batches: 60, perBatch: 10, opts: clusterOptions{maxWait: 100 * time.Millisecond}, disrupt: func(c *testCluster, k int) {
		if l := c.elect(testKey, -1); l < 0 {
			t.Logf("no ISR member to elect (ISR %v)", c.state(testKey).ISR)
		}
	}})
}

// TestLeaderKilledAndRestarted: the same, but the leader is stopped twice
// (the controller fences it: out of the ISR, a new leader from the ISR) and
// restarted from its data directory, rejoining as a follower.
// PAYMENTLOG_LONG=1 writes 100k records.
func TestLeaderKilledAndRestarted(t *testing.T) {
	t.Run("os", func(t *testing.T) { testLeaderKilled(t, false) })
	// On MemFS a crash keeps only what was fsynced: with fsync=always every
	// acknowledged record must survive on the restarted replicas too.
	t.Run("crash", func(t *testing.T) { testLeaderKilled(t, true) })
}

func testLeaderKilled(t *testing.T, crash bool) {
	lt := lossTest{producers: 4, batches: 50, perBatch: 20, opts: clusterOptions{maxWait: 100 * time.Millisecond, memFS: crash}}
	if os.Getenv("PAYMENTLOG_LONG") != "" {
		lt.batches, lt.perBatch = 250, 100
	}
	var stopped int32 = -1
	var stoppedDir string
	var stoppedFS *segment.MemFS
	lt.disrupt = func(c *testCluster, k int) {
		if stopped >= 0 { // bring the previous victim back
			c.startNodeFS(stopped, stoppedDir, stoppedFS)
			c.push(testKey)
			waitFor(t, "restarted node back in the ISR", 20*time.Second, func() bool {
				return slices.Contains(c.state(testKey).ISR, stopped)
			})
			stopped = -1
		}
		if k == 3 {
			return
		}
		st := c.state(testKey)
		stopped, stoppedDir = st.Leader, c.node(st.Leader).dir
		stoppedFS = c.crashNode(stopped)
		if c.elect(testKey, stopped) < 0 {
			t.Fatalf("no ISR member to elect (ISR %v)", st.ISR)
		}
	}
	runLossTest(t, lt)
}

type lossTest struct {
	producers, batches, perBatch int
	opts                         clusterOptions
	// disrupt is called at 1/4, 2/4 and 3/4 of the acknowledged batches (k = 1, 2, 3).
	disrupt func(c *testCluster, k int)
}

func runLossTest(t *testing.T, lt lossTest) {
	c := newTestCluster(t, lt.opts)
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)

	type ack struct {
		off int64
		val string
	}
	var (
		mu    sync.Mutex
		acked []ack
		done  atomic.Int64
	)
	var wg sync.WaitGroup
	for g := range lt.producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pid := int64(100 + g)
			for i := range lt.batches {
				vals := make([]string, lt.perBatch)
				for j := range vals {
					vals[j] = fmt.Sprintf("g%d-b%d-r%d", g, i, j)
				}
				batch := buildBatch(pid, int32(i*lt.perBatch), vals)
				for attempt := 0; ; attempt++ {
					if attempt > 2000 {
						t.Errorf("producer %d batch %d: giving up", g, i)
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
					r, err := c.produce(ctx, testKey, wire.AcksAll, batch)
					cancel()
					if err == nil && r.Err == wire.None {
						mu.Lock()
						for j, v := range vals {
							acked = append(acked, ack{r.BaseOffset + int64(j), v})
						}
						mu.Unlock()
						break
					}
					if err == nil && !r.Err.Retriable() {
						t.Errorf("producer %d batch %d: %v", g, i, r.Err)
						return
					}
					time.Sleep(5 * time.Millisecond) // client retry backoff
				}
				done.Add(1)
			}
		}()
	}
	total := int64(lt.producers * lt.batches)
	start := time.Now()
	for k := 1; k <= 3; k++ {
		waitFor(t, "progress", 60*time.Second, func() bool { return done.Load() >= total*int64(k)/4 })
		t.Logf("%v: %d/%d batches acked, disruption %d", time.Since(start).Round(time.Millisecond), done.Load(), total, k)
		lt.disrupt(c, k)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	waitInSync(t, c, testKey)
	st := c.state(testKey)
	leader := c.node(st.Leader).b.partition("payments", 0)
	hw, _, _, _ := c.node(st.Leader).b.PartitionInfo("payments", 0)
	got := readAll(t, leader.log, hw)
	seen := map[string]int64{}
	for off := int64(0); off < hw; off++ {
		v, ok := got[off]
		if !ok {
			t.Fatalf("offset %d missing below HW %d", off, hw)
		}
		if prev, dup := seen[v]; dup {
			t.Fatalf("record %s at %d and %d", v, prev, off)
		}
		seen[v] = off
	}
	for _, a := range acked {
		if got[a.off] != a.val {
			t.Fatalf("acked %s at %d, log has %q", a.val, a.off, got[a.off])
		}
	}
	if len(acked) != lt.producers*lt.batches*lt.perBatch {
		t.Fatalf("%d acked", len(acked))
	}
	want := logBytes(t, leader.log, hw)
	for _, n := range c.liveNodes() {
		if b := logBytes(t, n.b.partition("payments", 0).log, hw); !bytes.Equal(b, want) {
			t.Fatalf("replica %d differs from the leader below the HW", n.id)
		}
	}
	t.Logf("%d records, hw %d, final leader %d epoch %d", len(acked), hw, st.Leader, st.LeaderEpoch)
}

// With fsync always, a follower whose flush fails must not report the
// records as its own: the leader may not acknowledge acks=all on the
// strength of bytes that replica may lose.
//
// The brokers' clock (Config.Now, which the ISR's lag rule reads) moves only
// when the test moves it: however slowly a loaded machine opens the fetch
// sessions or schedules the fetchers, no follower leaves the ISR before the
// fault (a 500 ms real lag time once did, and the first produce was refused).
// Once both followers have failed their flush of "b", the test moves the
// clock past the lag time: the leader drops the silent followers from the
// ISR, below min ISR 3, and answers the parked produce.
func TestFollowerSyncFailureIsNotAcknowledged(t *testing.T) {
	const lag = 500 * time.Millisecond
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	c := newTestCluster(t, clusterOptions{memFS: true, lagTime: lag, now: now})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 3)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce before the fault: %+v", r)
	}
	waitInSync(t, c, testKey)
	for _, id := range []int32{2, 3} {
		c.node(id).fs.SetFault(func(op segment.FaultOp, path string) error {
			if op == segment.OpSync && strings.HasSuffix(path, ".log") {
				return errors.New("injected: disk flush failed")
			}
			return nil
		})
	}
	answered := c.produceAsync(testKey, wire.AcksAll, 30_000, 40*time.Second, buildBatch(-1, -1, []string{"b"}))
	waitFor(t, "both followers' flush of the batch to fail", 10*time.Second, func() bool {
		for _, id := range []int32{2, 3} {
			if c.node(id).b.partition(testKey.topic, testKey.partition).log.Failed() == nil {
				return false
			}
		}
		return true
	})
	clock.Add(int64(lag + time.Millisecond))
	a := <-answered
	t.Logf("answer with the followers' flushes failing: %+v %v", a.r, a.err)
	if a.err != nil {
		t.Fatalf("produce: %v", a.err)
	}
	if a.r.Err == wire.None {
		t.Fatalf("acks=all acknowledged although no follower could make the batch durable: %+v", a.r)
	}
	// Refused for the right reason: appended at offset 1, then not
	// committed (not refused up front, which would test nothing here).
	if a.r.Err != wire.NotEnoughReplicasAfterAppend || a.r.BaseOffset != 1 {
		t.Fatalf("answer %+v; want NotEnoughReplicasAfterAppend for the batch at offset 1", a.r)
	}
	if hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition); hw != 1 {
		t.Fatalf("leader HW %d; only offset 0 is on every replica's disk", hw)
	}
}

// TestFollowerDiskFullBacksOff: a follower whose disk is full cannot append
// what it fetched. It lets that partition sit out for a while instead of
// fetching the same bytes again on every round trip, and catches up once
// there is room.
func TestFollowerDiskFullBacksOff(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, lagTime: time.Minute, maxWait: 20 * time.Millisecond})
	other := tp{"payments", 1}
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.createPartition("payments", 1, []int32{1, 2}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)

	fs := c.node(2).fs
	var attempts atomic.Int64 // node 2's writes to payments-0's segment
	fs.SetFault(func(op segment.FaultOp, path string) error {
		if op == segment.OpWrite && strings.Contains(path, "payments-0") && strings.HasSuffix(path, ".log") {
			attempts.Add(1)
		}
		return nil
	})
	fs.SetCapacity(fs.Used())
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"b"})); r.Err != wire.None {
		t.Fatalf("acks=1 produce: %+v", r)
	}
	waitFor(t, "the follower's first append attempt", 5*time.Second, func() bool { return attempts.Load() > 0 })
	// The session keeps going for payments-1 (nothing to fetch there yet):
	// 15 more answers at 20 ms max wait (≥ 300 ms). Without the backoff
	// each one brought payments-0's record again and each append failed.
	from, first, start := c.node(1).b.Stats().ReplicaFetchResponses, attempts.Load(), time.Now()
	waitFor(t, "15 fetch answers", 10*time.Second, func() bool {
		return c.node(1).b.Stats().ReplicaFetchResponses >= from+15
	})
	// One retry per diskFullBackoff (a loaded machine may take longer than
	// one backoff for the 15 answers).
	if n, allowed := attempts.Load()-first, 1+int64(time.Since(start)/diskFullBackoff); n > allowed {
		t.Errorf("%d more append attempts on the full disk during 15 fetch answers in %v; want at most %d",
			n, time.Since(start).Round(time.Millisecond), allowed)
	}
	if err := c.node(2).b.partition(testKey.topic, testKey.partition).log.Failed(); err != nil {
		t.Fatalf("the full disk failed the follower's log: %v", err)
	}
	// A record for payments-1 meets the same full disk and sits out too.
	resp, err := c.produce(context.Background(), other, wire.AcksLeader, buildBatch(-1, -1, []string{"c"}))
	if err != nil || resp.Err != wire.None {
		t.Fatalf("produce to payments-1: %+v %v", resp, err)
	}
	fs.SetCapacity(-1)
	waitInSync(t, c, testKey)
	waitInSync(t, c, other)
}

// TestFollowerSyncsAPartialAppend: a fetch answer brings two batches and the
// follower's disk has room for the first only. The stored first batch is
// counted toward the leader's HW once the follower's next fetch reports it,
// so it must be on disk by then: a crash of the follower (only synced bytes
// survive) keeps it.
func TestFollowerSyncsAPartialAppend(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, lagTime: time.Minute, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)

	fs := c.node(2).fs
	fs.SetCapacity(fs.Used()) // the follower cannot take the next two batches
	small := buildBatch(-1, -1, []string{"b"})
	large := buildBatch(-1, -1, []string{strings.Repeat("c", 8<<10)})
	for _, b := range [][]byte{small, large} {
		if r := mustProduce(t, c, wire.AcksLeader, b); r.Err != wire.None {
			t.Fatalf("acks=1 produce: %+v", r)
		}
	}
	fs.SetCapacity(fs.Used() + int64(len(small)) + 1<<10) // room for the first only
	waitFor(t, "the leader's HW covers the first batch", 10*time.Second, func() bool {
		hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw >= 2
	})
	crashed := fs.CrashClone()
	lg, err := segment.Open(context.Background(), filepath.Join(c.node(2).dir, "payments-0"),
		segment.Options{FS: crashed, SegmentBytes: c.opts.segBytes, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	if got := readAll(t, lg, lg.LogEndOffset()); got[0] != "a" || got[1] != "b" {
		t.Fatalf("the follower's log after a crash holds %v; the leader's HW covers offsets 0 and 1", got)
	}
	fs.SetCapacity(-1)
	waitInSync(t, c, testKey)
}
