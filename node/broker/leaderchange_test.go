package broker

import (
	"context"
	"errors"
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

// syncGate blocks flushes of a partition's segment files on one MemFS until
// released, so a test can hold records appended-but-not-durable.
type syncGate struct {
	mu      sync.Mutex
	armed   bool // the next matching flush blocks
	blocked chan struct{}
	release chan struct{}
	once    sync.Once
}

// gateSyncs installs a gate on fs for flushes of path's .log files; the
// first matching flush after arm blocks until open is called.
func gateSyncs(t *testing.T, fs *segment.MemFS, partDir string) *syncGate {
	g := &syncGate{blocked: make(chan struct{}), release: make(chan struct{})}
	fs.SetFault(func(op segment.FaultOp, path string) error {
		if op != segment.OpSync || !strings.Contains(path, partDir) || !strings.HasSuffix(path, ".log") {
			return nil
		}
		g.mu.Lock()
		hit := g.armed
		g.armed = false
		g.mu.Unlock()
		if hit {
			close(g.blocked)
			<-g.release
		}
		return nil
	})
	t.Cleanup(g.open) // a blocked flush would keep Close waiting
	return g
}

func (g *syncGate) arm() {
	g.mu.Lock()
	g.armed = true
	g.mu.Unlock()
}

func (g *syncGate) open() { g.once.Do(func() { close(g.release) }) }

// waitBlocked waits until the armed flush is held, failing with msg after
// 10 s.
func (g *syncGate) waitBlocked(t *testing.T, msg string) {
	t.Helper()
	select {
	case <-g.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal(msg)
	}
}

// TestNewLeaderCountsOnlyDurableFollowerRecords: a follower appends what its
// leader sent and is still flushing it (fsync always) when leadership moves.
// Its fetch session with the new leader must not report those records as
// its log end before they are durable: the new leader counts that offset
// toward the HW, so an acks=all retry of the batch would be acknowledged on
// the strength of a copy a crash of the follower loses.
func TestNewLeaderCountsOnlyDurableFollowerRecords(t *testing.T) {
	c := newTestCluster(t, clusterOptions{memFS: true, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)

	fs3 := c.node(3).fs
	gate := gateSyncs(t, fs3, "payments-0")
	gate.arm()
	if r := mustProduce(t, c, wire.AcksLeader, buildBatch(-1, -1, []string{"b"})); r.Err != wire.None {
		t.Fatalf("acks=1 produce: %+v", r)
	}
	// Node 3 has appended b and its flush is stuck; node 2 has b durably.
	gate.waitBlocked(t, "node 3 never flushed b")
	waitFor(t, "node 2 has b", 10*time.Second, func() bool {
		_, _, leo, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return leo == 2
	})
	// Node 1 goes away; node 2 leads with ISR {2, 3}.
	if l := c.elect(testKey, 1); l != 2 {
		t.Fatalf("elected %d, want 2", l)
	}
	// While node 3's copy of b is not durable, node 2's HW must not pass it.
	// (Without the fix node 3's new fetch session reports offset 2 at once.)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if hw, _, _, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition); hw > 1 {
			t.Fatalf("node 2's HW is %d while node 3's copy of offset 1 is not durable (node 3's log after a crash: %v)",
				hw, crashedLog(t, c, 3, fs3.CrashClone()))
		}
		time.Sleep(2 * time.Millisecond)
	}
	gate.open()
	waitFor(t, "node 2's HW covers b", 10*time.Second, func() bool {
		hw, _, _, _ := c.node(2).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw == 2
	})
	if got := crashedLog(t, c, 3, fs3.CrashClone()); got[1] != "b" {
		t.Fatalf("node 3's log after a crash holds %v; the HW covers offset 1", got)
	}
}

// crashedLog opens node id's payments-0 log on a crashed file system.
func crashedLog(t *testing.T, c *testCluster, id int32, fs *segment.MemFS) map[int64]string {
	t.Helper()
	lg, err := segment.Open(context.Background(), filepath.Join(c.node(id).dir, "payments-0"),
		segment.Options{FS: fs, SegmentBytes: c.opts.segBytes, Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	defer lg.Close()
	return readAll(t, lg, lg.LogEndOffset())
}

// TestAckAfterLeadershipLostAndRegained: a produce appends its batch as
// leader of epoch 1, then waits (here behind another partition's flush in
// the same request) before it parks for the HW. Meanwhile the node loses
// the leadership, truncates its divergent tail to the new leader's log, and
// becomes leader again in epoch 3. The offset the batch was appended at now
// holds another record: the request must not be acknowledged with it.
func TestAckAfterLeadershipLostAndRegained(t *testing.T) {
	testAckAfterLeadershipLostAndRegained(t, wire.AcksAll)
}

// TestAcks1AfterLeadershipLostAndRegained is the same story for acks=1: the
// wait for the local flush must not end in an acknowledgement of offsets
// that, after the leadership was lost and regained, hold other records.
func TestAcks1AfterLeadershipLostAndRegained(t *testing.T) {
	testAckAfterLeadershipLostAndRegained(t, wire.AcksLeader)
}

func testAckAfterLeadershipLostAndRegained(t *testing.T, acks int8) {
	c := newTestCluster(t, clusterOptions{nodes: 2, memFS: true, maxWait: 20 * time.Millisecond})
	other := tp{"payments", 1}
	c.createPartition("payments", 0, []int32{1, 2}, 1, 1)
	c.createPartition("payments", 1, []int32{1}, 1, 1)
	c.stopNode(2)
	c.setISR(testKey, 1)

	gate := gateSyncs(t, c.node(1).fs, "payments-1")
	gate.arm()
	type result struct {
		resp wire.ProduceResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		// payments-1's wait (blocked flush) runs before payments-0's.
		var resp wire.ProduceResponse
		err := c.client.Call(context.Background(), c.node(1).addr, wire.TypeProduce, wire.ProduceRequest{
			Acks: acks, TimeoutMs: 30000, Topic: "payments",
			Parts: []wire.ProducePartition{
				{Partition: other.partition, LeaderEpoch: -1, Batch: buildBatch(-1, -1, []string{"other"})},
				{Partition: testKey.partition, LeaderEpoch: -1, Batch: buildBatch(-1, -1, []string{"x"})},
			}}, &resp)
		done <- result{resp, err}
	}()
	gate.waitBlocked(t, "the produce never flushed payments-1")
	waitFor(t, "x appended on node 1", 10*time.Second, func() bool {
		_, _, leo, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return leo == 1
	})

	// Node 2, empty, leads epoch 2 and writes y at offset 0; node 1 follows,
	// truncates x away and copies y.
	c.startNode(2, t.TempDir())
	c.setLeader(testKey, 2, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"y"})); r.Err != wire.None || r.BaseOffset != 0 {
		t.Fatalf("produce y: %+v", r)
	}
	waitFor(t, "node 1 holds y", 10*time.Second, func() bool {
		hw, _, leo, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition)
		return hw == 1 && leo == 1 && readAll(t, c.node(1).b.partition(testKey.topic, testKey.partition).log, 1)[0] == "y"
	})
	// Node 1 leads again, in epoch 3.
	c.setLeader(testKey, 1, 1, 2)

	gate.open()
	var res result
	select {
	case res = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("no produce answer")
	}
	if res.err != nil {
		t.Fatalf("produce: %v", res.err)
	}
	r := res.resp.Parts[1]
	if r.Err == wire.None {
		got := readAll(t, c.node(1).b.partition(testKey.topic, testKey.partition).log, 1)
		t.Fatalf("x acknowledged at offset %d, which holds %q", r.BaseOffset, got[r.BaseOffset])
	}
	t.Logf("x answered %v (retriable %v)", r.Err, r.Err.Retriable())
	if !r.Err.Retriable() {
		t.Fatalf("x answered %v, want a retriable error", r.Err)
	}
}

// TestUncertainISRExpansionStaysCounted: the leader proposes re-adding a
// caught-up follower; the controller commits it but the answer is lost (a
// timeout, or NotController from a controller whose proposal commits
// anyway). The follower is then in the controller's ISR, so it may be
// elected: until the outcome is known the leader must keep counting it
// toward the HW, not fall back to the smaller committed set and acknowledge
// records the follower does not have.
func TestUncertainISRExpansionStaysCounted(t *testing.T) {
	c := newTestCluster(t, clusterOptions{memFS: true, lagTime: time.Minute, maxWait: 20 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	if r := mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"a"})); r.Err != wire.None {
		t.Fatalf("produce: %+v", r)
	}
	waitInSync(t, c, testKey)

	committed, answer := make(chan struct{}), make(chan struct{})
	var faulted atomic.Bool
	c.mu.Lock()
	c.alterFault = func(req wire.AlterPartitionRequest) error {
		if !slices.Contains(req.NewISR, 3) || !faulted.CompareAndSwap(false, true) {
			return nil
		}
		close(committed)
		<-answer
		return errors.New("injected: the answer to a committed AlterPartition was lost")
	}
	c.parts[testKey].ISR = []int32{1, 2} // node 3 out; the leader re-adds it at once
	c.parts[testKey].PartitionEpoch++
	c.mu.Unlock()
	c.push(testKey)
	select {
	case <-committed:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader never proposed re-adding node 3")
	}
	if isr := c.state(testKey).ISR; !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("controller ISR %v", isr)
	}
	// Node 3 stops making progress: it appends b but cannot flush it.
	gate := gateSyncs(t, c.node(3).fs, "payments-0")
	gate.arm()
	close(answer)
	done := make(chan wire.ProducePartitionResponse, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		r, err := c.produce(ctx, testKey, wire.AcksAll, buildBatch(-1, -1, []string{"b"}))
		if err != nil {
			r.Err, r.Message = wire.Unknown, err.Error()
		}
		done <- r
	}()
	gate.waitBlocked(t, "node 3 never flushed b")
	// Node 3 is in the controller's ISR without b: the leader's HW must not
	// pass it (the refused proposal's backoff is 100 ms; give it ten times).
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if hw, _, _, _ := c.node(1).b.PartitionInfo(testKey.topic, testKey.partition); hw > 1 {
			t.Fatalf("leader HW %d passes node 3 (controller ISR %v) which lacks offset 1", hw, c.state(testKey).ISR)
		}
		time.Sleep(2 * time.Millisecond)
	}
	gate.open()
	if r := <-done; r.Err != wire.None || r.BaseOffset != 1 {
		t.Fatalf("produce b: %+v", r)
	}
	c.push(testKey)
	waitInSync(t, c, testKey)
}
