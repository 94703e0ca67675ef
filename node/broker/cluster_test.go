package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// testCluster is N in-process brokers on real QUIC over loopback, driven by a
// fake controller that holds each partition's state, applies AlterPartition
// at once and pushes every change to every live broker with ApplyPartition.
type testCluster struct {
	t      testing.TB
	ctx    context.Context
	client *quic.Endpoint
	opts   clusterOptions

	mu    sync.Mutex // the fake controller's state
	nodes map[int32]*testNode
	parts map[tp]*PartitionState
	// alterFault, when set, sees every AlterPartition the fake controller
	// committed; an error it returns is the requester's answer instead
	// (the answer was lost: the change stays committed and its metadata is
	// not pushed).
	alterFault func(req wire.AlterPartitionRequest) error
	applyMu    sync.Mutex // serialises metadata pushes so brokers see them in order
}

type clusterOptions struct {
	nodes   int
	lagTime time.Duration
	maxWait time.Duration
	hwDelay time.Duration // Config.ReplicaHWDelay (0: the default)
	// reorderWait is Config.ReorderWait and ReorderWaitFirst (0: the defaults).
	reorderWait time.Duration
	sync        segment.SyncPolicy
	segBytes    int64
	memFS       bool // every node on its own segment.MemFS (crashes keep only synced bytes)
	// snapshotBatches and snapshotBytes are Config.ProducerSnapshotBatches
	// and ProducerSnapshotBytes (0: the default).
	snapshotBatches int
	snapshotBytes   int64
	// idleTimeout, when set, is every node endpoint's quic IdleTimeout (its
	// keep-alive period a fifth of it).
	idleTimeout time.Duration
	// maxIndexBytes is segment.Options.MaxIndexBytes (0: the default).
	maxIndexBytes int
	// now is every broker's Config.Now (nil: time.Now).
	now func() time.Time
	// racks are the brokers' racks (Config.RackOf; nil: none).
	racks map[int32]string
	// retentionCheck and producerIDExpiration are Config.RetentionCheckInterval
	// and Config.ProducerIDExpiration (0: the defaults).
	retentionCheck, producerIDExpiration time.Duration
	// cleanerInterval is Config.CleanerInterval (0: the default;
	// negative: no cleaner loop).
	cleanerInterval time.Duration
	// cleanerIO is Config.CleanerIOMaxBytesPerSec.
	cleanerIO int64
	// logger, when set, is every broker's Config.Logger (nil: testLogger).
	logger *slog.Logger
	// releaseDiskReserve is every broker's Config.ReleaseDiskReserve.
	releaseDiskReserve func() bool
	// authorize is every broker's Config.Authorize (nil: everything allowed).
	authorize Authorize
	// currentTopicIDs gives every broker a Config.CurrentTopicID that reads
	// the cluster's partition states (c.parts), as a node's reads its image.
	currentTopicIDs bool
}

type testNode struct {
	id   int32
	dir  string
	fs   *segment.MemFS // nil: the OS file system
	ep   *quic.Endpoint
	b    *Broker
	addr string
	done chan struct{}
}

var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return quietLogger
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func newTestCluster(t testing.TB, o clusterOptions) *testCluster {
	t.Helper()
	if o.nodes == 0 {
		o.nodes = 3
	}
	if o.lagTime == 0 {
		o.lagTime = 2 * time.Second
	}
	if o.maxWait == 0 {
		o.maxWait = 200 * time.Millisecond
	}
	if o.segBytes == 0 {
		o.segBytes = 1 << 20
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &testCluster{t: t, ctx: ctx, opts: o, nodes: map[int32]*testNode{}, parts: map[tp]*PartitionState{}}
	ep, err := quic.New(ctx, quic.Config{Logger: quietLogger})
	if err != nil {
		t.Fatal(err)
	}
	c.client = ep
	for id := int32(1); id <= int32(o.nodes); id++ {
		var fs *segment.MemFS
		if o.memFS {
			fs = segment.NewMemFS()
		}
		c.startNodeFS(id, t.TempDir(), fs)
	}
	t.Cleanup(func() {
		for _, n := range c.liveNodes() {
			c.stopNode(n.id)
		}
		ep.Shutdown(context.Background())
		cancel()
	})
	return c
}

func (c *testCluster) startNode(id int32, dir string) *testNode {
	c.t.Helper()
	var fs *segment.MemFS
	if c.opts.memFS {
		fs = segment.NewMemFS()
	}
	return c.startNodeFS(id, dir, fs)
}

func (c *testCluster) startNodeFS(id int32, dir string, fs *segment.MemFS) *testNode {
	c.t.Helper()
	ep, err := quic.New(c.ctx, quic.Config{Addr: "127.0.0.1:0", Logger: quietLogger,
		IdleTimeout: c.opts.idleTimeout, KeepAlivePeriod: c.opts.idleTimeout / 5})
	if err != nil {
		c.t.Fatal(err)
	}
	n := &testNode{id: id, dir: dir, fs: fs, ep: ep, addr: ep.Addr(), done: make(chan struct{})}
	lopts := segment.Options{Sync: c.opts.sync, SegmentBytes: c.opts.segBytes, MaxIndexBytes: c.opts.maxIndexBytes}
	if fs != nil {
		lopts.FS = fs
	}
	n.b, err = New(c.ctx, Config{
		NodeID: id, Incarnation: time.Now().UnixNano(), DataDir: dir, Endpoint: ep,
		Log:                     lopts,
		ReplicaLagTime:          c.opts.lagTime,
		ReplicaFetchMaxWait:     c.opts.maxWait,
		ReplicaHWDelay:          c.opts.hwDelay,
		ReorderWait:             c.opts.reorderWait,
		ReorderWaitFirst:        c.opts.reorderWait,
		ProducerSnapshotBatches: c.opts.snapshotBatches,
		ProducerSnapshotBytes:   c.opts.snapshotBytes,
		Now:                     c.opts.now,
		RetentionCheckInterval:  c.opts.retentionCheck,
		CleanerInterval:         c.opts.cleanerInterval,
		CleanerIOMaxBytesPerSec: c.opts.cleanerIO,
		ProducerIDExpiration:    c.opts.producerIDExpiration,
		ReleaseDiskReserve:      c.opts.releaseDiskReserve,
		Authorize:               c.opts.authorize,
		RackOf:                  func(id int32) string { return c.opts.racks[id] },
		AlterPartition: func(ctx context.Context, req wire.AlterPartitionRequest) (wire.AlterPartitionResponse, error) {
			return c.alterPartition(ctx, req)
		},
		CurrentTopicID: c.currentTopicIDs(),
		Logger:         cmp.Or(c.opts.logger, testLogger(c.t)).With("node", id),
	})
	if err != nil {
		c.t.Fatal(err)
	}
	go func() {
		defer close(n.done)
		ep.Serve(c.ctx)
	}()
	c.mu.Lock()
	c.nodes[id] = n
	addrs := c.addrsLocked()
	nodes := c.liveNodesLocked()
	c.mu.Unlock()
	for _, m := range nodes {
		m.b.SetBrokerAddrs(addrs)
	}
	return n
}

// stopNode stops a node abruptly: the endpoint closes every connection at
// once (no draining), then the broker closes its logs.
func (c *testCluster) stopNode(id int32) { c.crashNode(id) }

// crashNode stops a node abruptly and, on MemFS, returns the file system as
// a crash at that instant leaves it (only synced bytes survive).
func (c *testCluster) crashNode(id int32) *segment.MemFS {
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n == nil {
		return nil
	}
	n.ep.Close()
	<-n.done
	var crashed *segment.MemFS
	if n.fs != nil {
		crashed = n.fs.CrashClone()
	}
	defer func() {
		if err := n.b.Close(); err != nil {
			c.t.Errorf("closing broker %d: %v", id, err)
		}
	}()
	return crashed
}

func (c *testCluster) addrsLocked() map[int32]string {
	m := map[int32]string{}
	for id, n := range c.nodes {
		m[id] = n.addr
	}
	return m
}

func (c *testCluster) liveNodesLocked() []*testNode {
	var out []*testNode
	for _, n := range c.nodes {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *testNode) int { return int(a.id - b.id) })
	return out
}

func (c *testCluster) liveNodes() []*testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveNodesLocked()
}

func (c *testCluster) node(id int32) *testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// createPartition registers a partition led by leader and pushes it.
func (c *testCluster) createPartition(topic string, partition int32, replicas []int32, leader, minISR int32) {
	c.mu.Lock()
	c.parts[tp{topic, partition}] = &PartitionState{Topic: topic, TopicID: "id-" + topic, Partition: partition,
		Leader: leader, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: replicas, ISR: slices.Clone(replicas), MinISR: minISR}
	c.mu.Unlock()
	c.push(tp{topic, partition})
}

// recreate gives the partition's topic a new id in the cluster's states, as
// the controller does for a topic deleted and re-created under its name
// (same leader and epochs), tells no broker, and returns the new state.
func (c *testCluster) recreate(key tp, topicID string) PartitionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := *c.parts[key]
	st.TopicID = topicID
	st.Replicas, st.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	c.parts[key] = &st
	return st
}

// currentTopicIDs is the brokers' Config.CurrentTopicID: with
// clusterOptions.currentTopicIDs, the topic id c.parts holds for a
// partition (ok false: none); nil otherwise.
func (c *testCluster) currentTopicIDs() func(topic string, partition int32) (string, bool) {
	if !c.opts.currentTopicIDs {
		return nil
	}
	return func(topic string, partition int32) (string, bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		st, ok := c.parts[tp{topic, partition}]
		if !ok {
			return "", false
		}
		return st.TopicID, true
	}
}

// setISR sets the partition's ISR, as the controller would (a new
// partition epoch), and pushes the state to every live broker.
func (c *testCluster) setISR(key tp, isr ...int32) {
	c.mu.Lock()
	c.parts[key].ISR = isr
	c.parts[key].PartitionEpoch++
	c.mu.Unlock()
	c.push(key)
}

// push sends the partition's current state to every live broker, in order.
func (c *testCluster) push(key tp) {
	c.applyMu.Lock()
	defer c.applyMu.Unlock()
	c.mu.Lock()
	st := *c.parts[key]
	st.Replicas, st.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	nodes := c.liveNodesLocked()
	c.mu.Unlock()
	for _, n := range nodes {
		if err := n.b.ApplyPartition(c.ctx, st); err != nil && !errors.Is(err, ErrClosed) {
			c.t.Errorf("node %d: ApplyPartition: %v", n.id, err)
		}
	}
}

// state returns a copy of the controller's view.
func (c *testCluster) state(key tp) PartitionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := *c.parts[key]
	st.Replicas, st.ISR = slices.Clone(st.Replicas), slices.Clone(st.ISR)
	return st
}

func (c *testCluster) alterPartition(ctx context.Context, req wire.AlterPartitionRequest) (wire.AlterPartitionResponse, error) {
	key := tp{req.Topic, req.Partition}
	c.mu.Lock()
	st := c.parts[key]
	if st == nil {
		c.mu.Unlock()
		return wire.AlterPartitionResponse{Err: wire.UnknownTopicOrPartition}, nil
	}
	if req.BrokerID != st.Leader || req.LeaderEpoch != st.LeaderEpoch {
		c.mu.Unlock()
		return wire.AlterPartitionResponse{Err: wire.FencedLeaderEpoch, ISR: st.ISR, LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch}, nil
	}
	if slices.Equal(req.NewISR, st.ISR) { // a retry of a committed change, as the real controller answers it
		resp := wire.AlterPartitionResponse{ISR: slices.Clone(st.ISR), LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch}
		c.mu.Unlock()
		return resp, nil
	}
	if req.PartitionEpoch != st.PartitionEpoch {
		c.mu.Unlock()
		return wire.AlterPartitionResponse{Err: wire.InvalidUpdateVersion, ISR: st.ISR, LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch}, nil
	}
	for _, id := range req.NewISR {
		// As the real controller (KIP-903): a member is added only on the
		// fetches of its running process.
		if n := c.nodes[id]; !slices.Contains(st.ISR, id) && (n == nil || req.MemberIncarnation(id) != n.b.cfg.Incarnation) {
			c.mu.Unlock()
			return wire.AlterPartitionResponse{Err: wire.IneligibleReplica}, nil
		}
	}
	st.ISR = slices.Clone(req.NewISR)
	st.PartitionEpoch++
	resp := wire.AlterPartitionResponse{ISR: slices.Clone(st.ISR), LeaderEpoch: st.LeaderEpoch, PartitionEpoch: st.PartitionEpoch}
	fault := c.alterFault
	c.mu.Unlock()
	if fault != nil {
		if err := fault(req); err != nil {
			return wire.AlterPartitionResponse{}, err
		}
	}
	go c.push(key) // metadata reaches the brokers asynchronously, like the real one
	return resp, nil
}

// elect moves leadership to another ISR member (new leader epoch), as the
// controller does when a leader is fenced or shut down. It returns the new
// leader, or -1 if no other ISR member exists.
func (c *testCluster) elect(key tp, exclude int32) int32 {
	c.mu.Lock()
	st := c.parts[key]
	next := int32(-1)
	for _, id := range st.ISR {
		if id != exclude && id != st.Leader && c.nodes[id] != nil {
			next = id
			break
		}
	}
	if next < 0 {
		c.mu.Unlock()
		return -1
	}
	st.Leader = next
	st.LeaderEpoch++
	st.PartitionEpoch++
	if exclude >= 0 {
		st.ISR = slices.DeleteFunc(st.ISR, func(id int32) bool { return id == exclude })
	}
	c.mu.Unlock()
	c.push(key)
	return next
}

// produce sends one batch to the partition's current leader.
func (c *testCluster) produce(ctx context.Context, key tp, acks int8, batch []byte) (wire.ProducePartitionResponse, error) {
	return c.produceWithin(ctx, key, acks, 5000, batch)
}

// produceWithin is produce with the request's own timeout (TimeoutMs).
func (c *testCluster) produceWithin(ctx context.Context, key tp, acks int8, timeoutMs int32, batch []byte) (wire.ProducePartitionResponse, error) {
	st := c.state(key)
	n := c.node(st.Leader)
	if n == nil {
		return wire.ProducePartitionResponse{Err: wire.LeaderNotAvailable}, nil
	}
	var resp wire.ProduceResponse
	err := c.client.Call(ctx, n.addr, wire.TypeProduce, wire.ProduceRequest{Acks: acks, TimeoutMs: timeoutMs, Topic: key.topic,
		Parts: []wire.ProducePartition{{Partition: key.partition, LeaderEpoch: st.LeaderEpoch, Batch: batch}}}, &resp)
	if err != nil {
		return wire.ProducePartitionResponse{}, err
	}
	if len(resp.Parts) != 1 {
		return wire.ProducePartitionResponse{}, fmt.Errorf("%d parts in response", len(resp.Parts))
	}
	return resp.Parts[0], nil
}

// fetch reads committed batches from the leader.
func (c *testCluster) fetch(ctx context.Context, key tp, offset int64, maxWait time.Duration) (wire.FetchPartitionResponse, error) {
	st := c.state(key)
	n := c.node(st.Leader)
	if n == nil {
		return wire.FetchPartitionResponse{Err: wire.LeaderNotAvailable}, nil
	}
	var resp wire.FetchResponse
	err := c.client.Call(ctx, n.addr, wire.TypeFetch, wire.FetchRequest{MaxWaitMs: int32(maxWait / time.Millisecond),
		MinBytes: 1, MaxBytes: 4 << 20, Topic: key.topic,
		Parts: []wire.FetchPartition{{Partition: key.partition, Offset: offset, LeaderEpoch: -1, LastFetchedEpoch: -1}}}, &resp)
	if err != nil {
		return wire.FetchPartitionResponse{}, err
	}
	return resp.Parts[0], nil
}

// waitFor polls cond (cheap, in-process) until it holds or the deadline passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// buildBatch encodes vals as one batch of producer pid starting at seq.
func buildBatch(pid int64, seq int32, vals []string) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{ProducerID: pid, BaseSequence: seq})
	for _, v := range vals {
		bd.Add(1700000000000, nil, []byte(v), nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// readAll returns every record of a partition log below limit as offset -> value.
func readAll(t testing.TB, lg *segment.Log, limit int64) map[int64]string {
	t.Helper()
	out := map[int64]string{}
	off := lg.LogStartOffset()
	for off < limit {
		v, err := lg.Read(off, 1<<20, limit)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(v.Data) == 0 {
			v.Release()
			break
		}
		if _, err := segment.SplitBatches(v.Data, func(b segment.Batch) error {
			it := b.Iter()
			for it.Next() {
				r := it.Record()
				out[r.Offset] = string(r.Value)
			}
			return it.Err()
		}); err != nil {
			t.Fatalf("batches at %d: %v", off, err)
		}
		off = v.Next
		v.Release()
	}
	return out
}

// logBytes returns the raw batch bytes of a log below limit.
func logBytes(t testing.TB, lg *segment.Log, limit int64) []byte {
	t.Helper()
	var out []byte
	off := lg.LogStartOffset()
	for off < limit {
		v, err := lg.Read(off, 1<<20, limit)
		if err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
		if len(v.Data) == 0 {
			v.Release()
			break
		}
		out = append(out, v.Data...)
		off = v.Next
		v.Release()
	}
	return out
}

// timedAnswer is a produce answer with how long it took.
type timedAnswer struct {
	r   wire.ProducePartitionResponse
	err error
	in  time.Duration
}

// produceAsync sends a produce with the given request timeout (ms) from a
// goroutine, giving up after within, and delivers its answer.
func (c *testCluster) produceAsync(key tp, acks int8, timeoutMs int32, within time.Duration, batch []byte) <-chan timedAnswer {
	answered := make(chan timedAnswer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), within)
		defer cancel()
		start := time.Now()
		r, err := c.produceWithin(ctx, key, acks, timeoutMs, batch)
		answered <- timedAnswer{r, err, time.Since(start)}
	}()
	return answered
}
