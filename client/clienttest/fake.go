// Package clienttest provides an in-process fake paymentlog cluster for
// testing clients: brokers with in-memory partition logs (one replica each: the
// high watermark is the log end), idempotent-producer checks like a real
// leader's (last 5 batches per producer and epoch remembered; a retried
// batch gets its original offset, a retry of part of one, a producer's
// split of a batch already written, that part's offsets; a sequence gap is
// refused with OutOfOrderSequence, a batch of a producer id with no state
// and a sequence other than 0 with UnknownProducerID, an older epoch with
// InvalidProducerEpoch; a newer epoch starts at sequence 0),
// leader changes and log truncation under test control, a topic's
// max.message.bytes (SetMaxMessageBytes), and fault injection per request
// (lose the request, lose the answer, hang, answer an error).
//
// Every batch is stamped with its partition's leader epoch when appended
// (0 until the first SetLeader), and a fetch that carries a last fetched
// epoch is checked against the epochs of the log as a real leader checks
// it (KIP-320): TruncateLog, SetLeader and new produces make the unclean
// election after which a consumer's position follows records the leader no
// longer has.
//
// The controller answers the consumer group requests (committed offsets,
// groups.go; members, members.go) as the real one does, keeping them in
// memory.
//
// A Cluster serves in memory (it implements the client's Call transport) or
// over real QUIC endpoints on 127.0.0.1 (Serve).
package clienttest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"paymentlog/node/membership"
	"paymentlog/node/metadata"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// Kind is what an InterceptFunc decides for one request.
type Kind int

const (
	Pass         Kind = iota // handle normally
	DropRequest              // fail the call without handling it (request lost)
	DropResponse             // handle it, then fail the call (answer lost)
	Hang                     // never answer: block until the caller gives up
	Refuse                   // answer every partition with Code, without handling (Produce, Fetch, ListOffsets, InitProducerID, CreateTopic, CreatePartitions, DeleteTopic, group, ACL and quota requests)
	// HandleThenRefuse handles it, then answers every partition with Code
	// (Produce, Fetch): a leader that appended a batch and then lost its
	// leadership (NotLeader) or timed out waiting for the ISR (Timeout);
	// or answers with Code (CreateTopic, CreatePartitions, the group
	// requests): a controller that proposed the records and lost its role
	// before they committed.
	HandleThenRefuse
	// HandleThenHang handles it, then never answers: a leader that
	// appended a batch and then waits on (the ISR, a flush) until the
	// caller gives up.
	HandleThenHang
)

// Action is an InterceptFunc's decision.
type Action struct {
	Kind  Kind
	Code  wire.ErrorCode // with Refuse
	Delay time.Duration  // before anything else
}

// ErrInjected is the error of a dropped call.
var ErrInjected = errors.New("clienttest: injected failure")

// Cluster is a fake cluster. Its exported methods are safe for concurrent use.
type Cluster struct {
	// intercept, set by SetIntercept, is consulted for every request.
	intercept atomic.Pointer[InterceptFunc]
	// Logger receives the QUIC endpoints' logs (Serve); default: discarded.
	Logger *slog.Logger
	// IgnoreMetadataWait makes every node answer a long-poll Metadata
	// request at once, as a build older than the long poll does.
	IgnoreMetadataWait atomic.Bool

	calls    [256]atomic.Int64
	inflight atomic.Int64 // dispatch calls running (WaitIdle)
	// throttle is SetThrottle's delay of Produce and Fetch answers (quotas.go).
	throttle [2]atomic.Int64

	mu struct {
		sync.Mutex
		brokers    []wire.BrokerInfo
		controller int32
		moff       int64
		topics     map[string]*topic
		nextPID    int64
		pidEpoch   int16                             // the epoch InitProducerID answers with (SetProducerEpoch)
		changed    chan struct{}                     // closed on every append
		frozen     map[string]*wire.MetadataResponse // by broker address: a stale image
		eps        []*quic.Endpoint
		groups     map[string]*group // consumer groups' committed offsets (groups.go)
		// members are the consumer groups' members (members.go), kept
		// by a coordinator started at membersSince with memberCfg; the
		// coordinators started so far number the member ids.
		members      *membership.Coordinator
		membersSince time.Time
		memberCfg    membership.Config
		coordinators int
		// policy holds the ACL bindings (acls.go) and client quotas
		// (quotas.go), changed by the real controller's decisions and
		// applied as its records are (policy.go); aclsEnforced is what
		// DescribeACLs says of enforcement.
		policy       *metadata.Image
		policyOffset uint64
		aclsEnforced bool
		// hidden are the topics the client may not describe (HideTopic).
		hidden map[string]bool
		// brokerHeld: the BrokerOffset a held broker reports (HoldBroker,
		// cluster_configs.go).
		brokerHeld map[int32]int64
	}
}

type topic struct {
	name     string
	id       string
	rf       int32
	minISR   int32
	maxBytes int32             // max.message.bytes (SetMaxMessageBytes); 0: no limit
	configs  map[string]string // as AlterConfigs set them (cluster_configs.go); checked by no one
	parts    []*partition
}

type partition struct {
	leader    int32
	epoch     int32
	replicas  []int32
	isr       []int32 // nil: every replica (SetISR)
	elr       []int32 // eligible leader replicas the metadata shows (SetELR)
	batches   []segment.Batch
	next      int64 // log end offset (= high watermark)
	logStart  int64 // raised by DeleteBefore (retention)
	producers map[int64]*producerState
	// hwUnknown: the leader is new and its HW has not reached the start of
	// its epoch (KIP-207): fetches report HW -1, ListOffsets(latest)
	// answers OffsetNotAvailable.
	hwUnknown bool
	// acked is the end of the highest batch a Produce answer reported as
	// written (the answer left the fake): TruncateUnacked keeps it.
	acked int64
}

// producerState remembers a producer's epoch and its last 5 batches of that
// epoch on a partition.
type producerState struct {
	epoch  int16
	recent []seqEntry
}

type seqEntry struct {
	first, last int32
	base        int64
}

func (s *producerState) lastSeq() int32 { return s.recent[len(s.recent)-1].last }

// New creates a cluster of n brokers (ids 1..n, addresses "fake-N" until Serve).
func New(n int) *Cluster {
	c := &Cluster{}
	c.mu.topics = map[string]*topic{}
	c.mu.groups = map[string]*group{}
	c.mu.nextPID = 1000
	c.mu.controller = 1
	c.mu.changed = make(chan struct{})
	for i := 1; i <= n; i++ {
		c.mu.brokers = append(c.mu.brokers, wire.BrokerInfo{ID: int32(i), Addr: fmt.Sprintf("fake-%d", i), State: "alive", ControllerEligible: true})
	}
	c.newCoordinatorLocked()
	return c
}

// Addrs lists broker addresses in id order.
func (c *Cluster) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.mu.brokers))
	for i, b := range c.mu.brokers {
		out[i] = b.Addr
	}
	return out
}

// WaitIdle waits until no request is being handled, or ctx ends. A client
// that gave up on a request (a cancelled call, a closed producer) does not
// stop the fake at once: a delayed request may still append after the
// client has returned, as a real broker may. Read the logs after WaitIdle.
func (c *Cluster) WaitIdle(ctx context.Context) error {
	for c.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return nil
}

// Calls returns how many requests of type t were received.
func (c *Cluster) Calls(t quic.FrameType) int64 { return c.calls[t].Load() }

// CreateTopic creates a topic with leaders spread round-robin.
func (c *Cluster) CreateTopic(name string, partitions int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.createLocked(name, int32(partitions), 3, 2)
}

func (c *Cluster) createLocked(name string, partitions, rf, minISR int32) {
	n := int32(len(c.mu.brokers))
	t := &topic{name: name, id: fmt.Sprintf("id-%s", name), rf: rf, minISR: minISR}
	for p := int32(0); p < partitions; p++ {
		var reps []int32
		for r := int32(0); r < min(rf, n); r++ {
			reps = append(reps, c.mu.brokers[(p+r)%n].ID)
		}
		t.parts = append(t.parts, &partition{leader: reps[0], replicas: reps, producers: map[int64]*producerState{}})
	}
	c.mu.topics[name] = t
	c.bumpLocked()
}

// SetMaxMessageBytes sets a topic's max.message.bytes (0: no limit): the
// metadata reports it and leaders refuse a larger batch with
// RecordTooLarge, before the producer-sequence checks, as a real leader
// does.
func (c *Cluster) SetMaxMessageBytes(topicName string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.topics[topicName].maxBytes = int32(n)
	c.bumpLocked()
}

// SetLeader moves a partition's leadership (leader -1: offline) and bumps its epoch.
func (c *Cluster) SetLeader(topicName string, p int32, leader int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.mu.topics[topicName].parts[p]
	pt.leader = leader
	pt.epoch++
	c.bumpLocked()
}

// SetISR sets the ISR a partition's metadata shows (nil: every replica);
// nothing else follows it.
func (c *Cluster) SetISR(topicName string, p int32, isr []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.topics[topicName].parts[p].isr = isr
	c.bumpLocked()
}

// SetELR sets the eligible leader replicas a partition's metadata shows;
// nothing else follows it.
func (c *Cluster) SetELR(topicName string, p int32, elr []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.topics[topicName].parts[p].elr = elr
	c.bumpLocked()
}

// SetHWUnknown makes a partition's leader behave as a new leader whose HW
// has not yet reached the start of its epoch (KIP-207), or no longer.
func (c *Cluster) SetHWUnknown(topicName string, p int32, unknown bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.topics[topicName].parts[p].hwUnknown = unknown
	c.wakeLocked()
}

// Leader returns a partition's leader and epoch.
func (c *Cluster) Leader(topicName string, p int32) (int32, int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.mu.topics[topicName].parts[p]
	return pt.leader, pt.epoch
}

// FreezeMetadata makes broker id answer Metadata requests, from now on,
// with the cluster metadata as it is now: a node cut off from the
// controller serves its stale image. Produce, Fetch and the rest are still
// answered from the current state.
func (c *Cluster) FreezeMetadata(id int32) {
	resp := c.metadata(&wire.MetadataRequest{})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.frozen == nil {
		c.mu.frozen = map[string]*wire.MetadataResponse{}
	}
	c.mu.frozen[c.mu.brokers[id-1].Addr] = resp
}

func cloneMetadata(r *wire.MetadataResponse) *wire.MetadataResponse {
	cp := *r
	cp.Brokers = append([]wire.BrokerInfo(nil), r.Brokers...)
	cp.Topics = append([]wire.TopicMetadata(nil), r.Topics...)
	for i := range cp.Topics {
		cp.Topics[i].Partitions = append([]wire.PartitionMetadata(nil), r.Topics[i].Partitions...)
	}
	return &cp
}

// SetController changes the active controller. A new one knows no group
// member (ForgetMembers).
func (c *Cluster) SetController(id int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if id != c.mu.controller {
		c.mu.controller = id
		c.newCoordinatorLocked()
	}
	c.bumpLocked()
}

// SetRack sets broker id's rack (as node start --rack registers it).
func (c *Cluster) SetRack(id int32, rack string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.mu.brokers {
		if c.mu.brokers[i].ID == id {
			c.mu.brokers[i].Rack = rack
		}
	}
	c.bumpLocked()
}

// DeleteBefore drops the batches wholly below offset and makes offset the
// log start, as retention (or DeleteRecords) on a real broker does.
func (c *Cluster) DeleteBefore(topicName string, p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.mu.topics[topicName].parts[p]
	i := sort.Search(len(pt.batches), func(i int) bool { return pt.batches[i].LastOffset() >= offset })
	pt.batches = pt.batches[i:]
	pt.logStart = max(pt.logStart, min(offset, pt.next))
}

// ForgetProducers forgets every idempotent producer's state on a partition,
// as a leader does that expired them after a quiet period (or that never
// saw their batches): their next batch is answered UnknownProducerID unless
// it starts a sequence at 0.
func (c *Cluster) ForgetProducers(topicName string, p int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.topics[topicName].parts[p].producers = map[int64]*producerState{}
}

// SetNextProducerID makes the next InitProducerID answer id, and the ones
// after it id+1, id+2, ...: a node handing out an id a client must refuse
// (0 or below) is made by giving one.
func (c *Cluster) SetNextProducerID(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.nextPID = id - 1
}

// SetProducerEpoch makes InitProducerID answer fresh producer ids with epoch
// e (0 until set).
func (c *Cluster) SetProducerEpoch(e int16) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.pidEpoch = e
}

// TruncateLog drops every batch at or after the one containing offset (as a
// new leader without those batches would have it) and rebuilds the producer
// state from what is left.
func (c *Cluster) TruncateLog(topicName string, p int32, offset int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.truncateLocked(c.mu.topics[topicName].parts[p], offset)
}

func (c *Cluster) truncateLocked(pt *partition, offset int64) {
	i := sort.Search(len(pt.batches), func(i int) bool { return pt.batches[i].LastOffset() >= offset })
	pt.batches = pt.batches[:i]
	pt.next = 0
	if i > 0 {
		pt.next = pt.batches[i-1].LastOffset() + 1
	}
	pt.producers = map[int64]*producerState{}
	for _, b := range pt.batches {
		h, _ := segment.ParseHeader(b)
		if h.ProducerID >= 0 {
			pt.remember(h, b.BaseOffset())
		}
	}
	c.bumpLocked()
}

// TruncateUnacked drops the batches after the last one a Produce answer
// reported as written, as a new leader that had not replicated the old
// leader's unacknowledged tail would have it (acks=all), and returns the new
// log end.
func (c *Cluster) TruncateUnacked(topicName string, p int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	pt := c.mu.topics[topicName].parts[p]
	c.truncateLocked(pt, pt.acked)
	return pt.next
}

// LogEnd returns a partition's log end offset.
func (c *Cluster) LogEnd(topicName string, p int32) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.topics[topicName].parts[p].next
}

// Stored is one record in a fake partition log.
type Stored struct {
	Offset int64
	Key    []byte
	Value  []byte
}

// Records returns a copy of a partition's records in offset order.
func (c *Cluster) Records(topicName string, p int32) []Stored {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Stored
	for _, b := range c.mu.topics[topicName].parts[p].batches {
		it := b.Iter()
		for it.Next() {
			r := it.Record()
			out = append(out, Stored{Offset: r.Offset, Key: clone(r.Key), Value: clone(r.Value)})
		}
	}
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// bumpLocked moves the metadata offset on (a metadata change) and wakes
// the requests waiting for one.
func (c *Cluster) bumpLocked() {
	c.mu.moff++
	c.wakeLocked()
}

func (c *Cluster) wakeLocked() {
	close(c.mu.changed)
	c.mu.changed = make(chan struct{})
}

func (pt *partition) remember(h segment.Header, base int64) {
	st := pt.producers[h.ProducerID]
	if st == nil || h.ProducerEpoch > st.epoch {
		st = &producerState{epoch: h.ProducerEpoch}
		pt.producers[h.ProducerID] = st
	}
	st.recent = append(st.recent, seqEntry{first: h.BaseSequence, last: h.BaseSequence + h.RecordCount - 1, base: base})
	if len(st.recent) > 5 {
		st.recent = st.recent[len(st.recent)-5:]
	}
}

// Call implements the client's transport in memory: it copies nothing that
// the caller could observe changing and honours ctx. A Produce request's
// batches are copied before Call returns, as a real transport has written
// them by then: the caller may reuse their buffers once Call returns, even
// on ctx's end while the request is still being handled.
func (c *Cluster) Call(ctx context.Context, addr string, t quic.FrameType, req, resp any) error {
	type result struct {
		v   any
		err error
	}
	if pr, ok := req.(*wire.ProduceRequest); ok {
		cp := *pr
		cp.Parts = append([]wire.ProducePartition(nil), pr.Parts...)
		for i := range cp.Parts {
			cp.Parts[i].Batch = append(wire.Bytes(nil), pr.Parts[i].Batch...)
		}
		req = &cp
	}
	ch := make(chan result, 1)
	go func() {
		v, err := c.dispatch(ctx, addr, t, req)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return r.err
		}
		return assign(resp, r.v)
	case <-ctx.Done():
		return &quic.OpError{Op: "call", Addr: addr, Err: ctx.Err()}
	}
}

func assign(dst, src any) error {
	switch d := dst.(type) {
	case *wire.MetadataResponse:
		*d = *src.(*wire.MetadataResponse)
	case *wire.CreateTopicResponse:
		*d = *src.(*wire.CreateTopicResponse)
	case *wire.DeleteTopicResponse:
		*d = *src.(*wire.DeleteTopicResponse)
	case *wire.DescribeClusterResponse:
		*d = *src.(*wire.DescribeClusterResponse)
	case *wire.InitProducerIDResponse:
		*d = *src.(*wire.InitProducerIDResponse)
	case *wire.ProduceResponse:
		*d = *src.(*wire.ProduceResponse)
	case *wire.FetchResponse:
		*d = *src.(*wire.FetchResponse)
	case *wire.ListOffsetsResponse:
		*d = *src.(*wire.ListOffsetsResponse)
	default:
		// Any other response of the request's own type (admin requests).
		dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
		if dv.Kind() != reflect.Pointer || dv.Type() != sv.Type() {
			return fmt.Errorf("clienttest: unexpected response type %T", dst)
		}
		dv.Elem().Set(sv.Elem())
	}
	return nil
}

// InterceptFunc decides what the fake cluster does with one request.
type InterceptFunc func(addr string, t quic.FrameType, req any) Action

// SetIntercept makes f decide every later request (nil: handle all
// normally). It is safe while the cluster serves: a plain field written by
// a test after Serve and read by the server's goroutines is a data race,
// because the request that follows travels through a socket, which the race
// detector (and the memory model) does not count as synchronisation.
func (c *Cluster) SetIntercept(f InterceptFunc) {
	if f == nil {
		c.intercept.Store(nil)
		return
	}
	c.intercept.Store(&f)
}

// InterceptProduce makes every later Produce request meet act; other
// requests are handled normally.
func (c *Cluster) InterceptProduce(act Action) {
	c.SetIntercept(func(_ string, t quic.FrameType, _ any) Action {
		if t == wire.TypeProduce {
			return act
		}
		return Action{}
	})
}

// dispatch applies the intercept function, then handles the request.
func (c *Cluster) dispatch(ctx context.Context, addr string, t quic.FrameType, req any) (any, error) {
	c.calls[t].Add(1)
	c.inflight.Add(1)
	defer c.inflight.Add(-1)
	act := Action{}
	if f := c.intercept.Load(); f != nil {
		act = (*f)(addr, t, req)
	}
	if act.Delay > 0 {
		select {
		case <-time.After(act.Delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	switch act.Kind {
	case DropRequest:
		return nil, &quic.OpError{Op: "call", Addr: addr, Err: ErrInjected}
	case Hang:
		<-ctx.Done()
		return nil, &quic.OpError{Op: "call", Addr: addr, Err: ctx.Err()}
	case Refuse:
		return c.refuse(req, act.Code), nil
	}
	v, err := c.handle(ctx, addr, req, act.Kind == Pass)
	if err != nil {
		return nil, err
	}
	switch act.Kind {
	case DropResponse:
		return nil, &quic.OpError{Op: "call", Addr: addr, Err: ErrInjected}
	case HandleThenRefuse:
		return c.refuse(req, act.Code), nil
	case HandleThenHang:
		<-ctx.Done()
		return nil, &quic.OpError{Op: "call", Addr: addr, Err: ctx.Err()}
	}
	return v, nil
}

func (c *Cluster) refuse(req any, code wire.ErrorCode) any {
	switch r := req.(type) {
	case *wire.ProduceRequest:
		resp := &wire.ProduceResponse{}
		for _, p := range r.Parts {
			resp.Parts = append(resp.Parts, wire.ProducePartitionResponse{Partition: p.Partition, Err: code, BaseOffset: -1, LeaderHint: -1})
		}
		return resp
	case *wire.FetchRequest:
		resp := &wire.FetchResponse{}
		for _, p := range r.Parts {
			resp.Parts = append(resp.Parts, wire.FetchPartitionResponse{Partition: p.Partition, Err: code, LeaderHint: -1})
		}
		return resp
	case *wire.CreateTopicRequest:
		return &wire.CreateTopicResponse{Err: code}
	case *wire.CreatePartitionsRequest:
		return &wire.CreatePartitionsResponse{Err: code}
	case *wire.DeleteTopicRequest:
		return &wire.DeleteTopicResponse{Err: code}
	case *wire.OffsetCommitRequest:
		return &wire.OffsetCommitResponse{Err: code, ControllerID: -1}
	case *wire.OffsetFetchRequest:
		return &wire.OffsetFetchResponse{Err: code, ControllerID: -1}
	case *wire.ListGroupsRequest:
		return &wire.ListGroupsResponse{Err: code, ControllerID: -1}
	case *wire.DeleteGroupRequest:
		return &wire.DeleteGroupResponse{Err: code, ControllerID: -1}
	case *wire.GroupHeartbeatRequest:
		return &wire.GroupHeartbeatResponse{Err: code, ControllerID: -1}
	case *wire.ListOffsetsRequest:
		resp := &wire.ListOffsetsResponse{}
		for _, p := range r.Parts {
			resp.Parts = append(resp.Parts, wire.ListOffsetsPartitionResponse{Partition: p.Partition, Err: code, LeaderHint: -1})
		}
		return resp
	case *wire.InitProducerIDRequest:
		return &wire.InitProducerIDResponse{Err: code}
	case *wire.CreateACLsRequest:
		return &wire.CreateACLsResponse{Err: code, Message: "refused by clienttest", ControllerID: -1}
	case *wire.DeleteACLsRequest:
		return &wire.DeleteACLsResponse{Err: code, Message: "refused by clienttest", ControllerID: -1}
	case *wire.DescribeACLsRequest:
		return &wire.DescribeACLsResponse{Err: code, Message: "refused by clienttest"}
	case *wire.AlterClientQuotasRequest:
		return &wire.AlterClientQuotasResponse{Err: code, Message: "refused by clienttest", ControllerID: -1}
	case *wire.DescribeClientQuotasRequest:
		return &wire.DescribeClientQuotasResponse{Err: code, Message: "refused by clienttest"}
	}
	panic(fmt.Sprintf("clienttest: Refuse is for Produce, Fetch, ListOffsets, InitProducerID, CreateTopic, CreatePartitions, DeleteTopic, "+
		"the group, ACL and quota requests, not %T", req))
}

func (c *Cluster) brokerAt(addr string) int32 {
	for _, b := range c.mu.brokers {
		if b.Addr == addr {
			return b.ID
		}
	}
	return -1
}

// handle answers one request as the broker at addr; answered says a
// Produce answer will reach the caller as it is.
func (c *Cluster) handle(ctx context.Context, addr string, req any, answered bool) (any, error) {
	switch r := req.(type) {
	case *wire.MetadataRequest:
		c.waitMetadata(ctx, r)
		c.mu.Lock()
		fr := c.mu.frozen[addr]
		c.mu.Unlock()
		if fr != nil {
			return cloneMetadata(fr), nil
		}
		return c.metadata(r), nil
	case *wire.DescribeClusterRequest:
		return c.describeCluster(addr), nil
	case *wire.AlterClusterConfigsRequest:
		return c.alterClusterConfigs(addr, r), nil
	case *wire.AlterConfigsRequest:
		return c.alterConfigs(addr, r), nil
	case *wire.DescribeReplicaRequest:
		return c.describeReplica(addr, r), nil
	case *wire.DescribeQuorumRequest:
		return c.describeQuorum(), nil
	case *wire.InitProducerIDRequest:
		c.mu.Lock()
		defer c.mu.Unlock()
		c.mu.nextPID++
		return &wire.InitProducerIDResponse{ProducerID: c.mu.nextPID, ProducerEpoch: c.mu.pidEpoch}, nil
	case *wire.CreateTopicRequest:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.brokerAt(addr) != c.mu.controller {
			return &wire.CreateTopicResponse{Err: wire.NotController}, nil
		}
		if _, ok := c.mu.topics[r.Name]; ok {
			return &wire.CreateTopicResponse{Err: wire.TopicAlreadyExists, Message: "topic " + r.Name + " exists"}, nil
		}
		c.createLocked(r.Name, r.Partitions, r.ReplicationFactor, r.MinISR)
		return &wire.CreateTopicResponse{TopicID: c.mu.topics[r.Name].id, MetadataOffset: c.mu.moff}, nil
	case *wire.DeleteTopicRequest:
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.brokerAt(addr) != c.mu.controller {
			return &wire.DeleteTopicResponse{Err: wire.NotController}, nil
		}
		if _, ok := c.mu.topics[r.Name]; !ok {
			return &wire.DeleteTopicResponse{Err: wire.UnknownTopicOrPartition}, nil
		}
		delete(c.mu.topics, r.Name)
		c.deleteTopicOffsetsLocked(r.Name)
		c.bumpLocked()
		return &wire.DeleteTopicResponse{}, nil
	case *wire.CreatePartitionsRequest:
		return c.createPartitions(addr, r), nil
	case *wire.ProduceRequest:
		ms := c.holdBack(ctx, 0)
		resp := c.produce(addr, r, answered)
		resp.ThrottleMs = ms
		return resp, nil
	case *wire.FetchRequest:
		ms := c.holdBack(ctx, 1)
		resp := c.fetch(ctx, addr, r)
		resp.ThrottleMs = ms
		return resp, nil
	case *wire.ListOffsetsRequest:
		return c.listOffsets(addr, r), nil
	case *wire.OffsetCommitRequest:
		return c.offsetCommit(addr, r), nil
	case *wire.OffsetFetchRequest:
		return c.offsetFetch(addr, r), nil
	case *wire.ListGroupsRequest:
		return c.listGroups(addr), nil
	case *wire.DeleteGroupRequest:
		return c.deleteGroup(addr, r), nil
	case *wire.GroupHeartbeatRequest:
		return c.groupHeartbeat(addr, r), nil
	case *wire.CreateACLsRequest:
		return c.createACLs(addr, r), nil
	case *wire.DeleteACLsRequest:
		return c.deleteACLs(addr, r), nil
	case *wire.DescribeACLsRequest:
		return c.describeACLs(r), nil
	case *wire.AlterClientQuotasRequest:
		return c.alterClientQuotas(addr, r), nil
	case *wire.DescribeClientQuotasRequest:
		return c.describeClientQuotas(), nil
	}
	return nil, fmt.Errorf("clienttest: unexpected request %T", req)
}

func (c *Cluster) metadata(r *wire.MetadataRequest) *wire.MetadataResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &wire.MetadataResponse{ControllerID: c.mu.controller, MetadataOffset: c.mu.moff, Brokers: append([]wire.BrokerInfo(nil), c.mu.brokers...)}
	names := r.Topics
	if len(names) == 0 {
		for n := range c.mu.topics {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	for _, n := range names {
		if c.mu.hidden[n] {
			// As a node enforcing ACLs answers a client that may not
			// describe the topic: left out of an answer for every
			// topic, refused when named.
			if len(r.Topics) > 0 {
				resp.Topics = append(resp.Topics, wire.TopicMetadata{Name: n, Err: wire.TopicAuthorizationFailed})
			}
			continue
		}
		t, ok := c.mu.topics[n]
		if !ok {
			resp.Topics = append(resp.Topics, wire.TopicMetadata{Name: n, Err: wire.UnknownTopicOrPartition})
			continue
		}
		tm := wire.TopicMetadata{Name: n, ID: t.id, ReplicationFactor: t.rf, MinISR: t.minISR, MaxMessageBytes: t.maxBytes, Configs: maps.Clone(t.configs)}
		for i, pt := range t.parts {
			isr := pt.isr
			if isr == nil {
				isr = pt.replicas
			}
			tm.Partitions = append(tm.Partitions, wire.PartitionMetadata{Partition: int32(i), Leader: pt.leader, LeaderEpoch: pt.epoch,
				Replicas: append([]int32(nil), pt.replicas...), ISR: append([]int32(nil), isr...), ELR: append([]int32(nil), pt.elr...),
				HighWatermark: -1, LogStartOffset: -1})
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp
}

// partitionAtLocked finds a partition led by the broker at addr.
func (c *Cluster) partitionAtLocked(addr, topicName string, p int32) (*partition, wire.ErrorCode) {
	t, ok := c.mu.topics[topicName]
	if !ok || p < 0 || int(p) >= len(t.parts) {
		return nil, wire.UnknownTopicOrPartition
	}
	pt := t.parts[p]
	if pt.leader != c.brokerAt(addr) {
		return pt, wire.NotLeader
	}
	return pt, wire.None
}

func checkEpoch(pt *partition, e int32) wire.ErrorCode {
	switch {
	case e < 0 || e == pt.epoch:
		return wire.None
	case e < pt.epoch:
		return wire.FencedLeaderEpoch
	default:
		return wire.UnknownLeaderEpoch
	}
}

func (c *Cluster) produce(addr string, req *wire.ProduceRequest, answered bool) *wire.ProduceResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &wire.ProduceResponse{}
	for _, pp := range req.Parts {
		r := wire.ProducePartitionResponse{Partition: pp.Partition, BaseOffset: -1, LeaderHint: -1}
		pt, code := c.partitionAtLocked(addr, req.Topic, pp.Partition)
		if code == wire.None {
			code = checkEpoch(pt, pp.LeaderEpoch)
		}
		if pt != nil {
			r.LeaderHint, r.LeaderEpoch = pt.leader, pt.epoch
		}
		if code != wire.None {
			r.Err = code
			resp.Parts = append(resp.Parts, r)
			continue
		}
		if limit := c.mu.topics[req.Topic].maxBytes; limit > 0 && len(pp.Batch) > int(limit) {
			r.Err, r.Message = wire.RecordTooLarge, fmt.Sprintf("batch of %d bytes is larger than topic %s's max.message.bytes (%d)", len(pp.Batch), req.Topic, limit)
			resp.Parts = append(resp.Parts, r)
			continue
		}
		r.Err, r.Message, r.BaseOffset = c.appendLocked(pt, pp.Batch)
		if answered && r.Err == wire.None {
			i := sort.Search(len(pt.batches), func(i int) bool { return pt.batches[i].LastOffset() >= r.BaseOffset })
			pt.acked = max(pt.acked, pt.batches[i].LastOffset()+1)
		}
		resp.Parts = append(resp.Parts, r)
	}
	return resp
}

func (c *Cluster) appendLocked(pt *partition, raw []byte) (wire.ErrorCode, string, int64) {
	b := append(segment.Batch(nil), raw...) // the request's bytes are the caller's
	if err := b.Validate(); err != nil {
		return wire.CorruptMessage, err.Error(), -1
	}
	h, err := segment.ParseHeader(b)
	if err != nil {
		return wire.CorruptMessage, err.Error(), -1
	}
	if h.ProducerID >= 0 {
		st := pt.producers[h.ProducerID]
		switch {
		case st == nil && h.BaseSequence != 0:
			return wire.UnknownProducerID, fmt.Sprintf("no state for producer id %d", h.ProducerID), -1
		case st != nil && h.ProducerEpoch < st.epoch:
			return wire.InvalidProducerEpoch, fmt.Sprintf("producer epoch %d, the partition has %d", h.ProducerEpoch, st.epoch), -1
		case st != nil && h.ProducerEpoch > st.epoch:
			st = nil // a new epoch starts at sequence 0
		}
		if st != nil {
			last := h.BaseSequence + h.RecordCount - 1
			for _, e := range st.recent {
				if e.first == h.BaseSequence {
					return wire.None, "", e.base // a retry: its original offset
				}
				if e.first < h.BaseSequence && last <= e.last {
					return wire.None, "", e.base + int64(h.BaseSequence-e.first) // a retry of part of it
				}
			}
		}
		expect := int32(0)
		if st != nil {
			expect = st.lastSeq() + 1
		}
		if h.BaseSequence != expect {
			return wire.OutOfOrderSequence, fmt.Sprintf("expected sequence %d, got %d", expect, h.BaseSequence), -1
		}
	}
	base := pt.next
	b.SetBaseOffset(base)
	b.SetLeaderEpoch(pt.epoch)
	pt.batches = append(pt.batches, b)
	pt.next = b.LastOffset() + 1
	if h.ProducerID >= 0 {
		pt.remember(h, base)
	}
	c.wakeLocked()
	return wire.None, "", base
}

func (c *Cluster) fetch(ctx context.Context, addr string, req *wire.FetchRequest) *wire.FetchResponse {
	deadline := time.Now().Add(time.Duration(req.MaxWaitMs) * time.Millisecond)
	for {
		c.mu.Lock()
		resp, any := c.fetchLocked(addr, req)
		changed := c.mu.changed
		c.mu.Unlock()
		left := time.Until(deadline)
		if any || left <= 0 {
			return resp
		}
		t := time.NewTimer(left)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		if ctx.Err() != nil {
			return resp
		}
	}
}

// fetchLocked reads each partition; any reports whether something (data or
// an error) is worth answering at once.
func (c *Cluster) fetchLocked(addr string, req *wire.FetchRequest) (*wire.FetchResponse, bool) {
	resp := &wire.FetchResponse{}
	any := false
	for _, fp := range req.Parts {
		r := wire.FetchPartitionResponse{Partition: fp.Partition, LeaderHint: -1}
		pt, code := c.partitionAtLocked(addr, req.Topic, fp.Partition)
		if code == wire.None {
			code = checkEpoch(pt, fp.LeaderEpoch)
		}
		if pt != nil {
			r.LeaderHint, r.LeaderEpoch = pt.leader, pt.epoch
			r.HighWatermark, r.LogEnd, r.LogStart = pt.next, pt.next, pt.logStart
			if pt.hwUnknown {
				r.HighWatermark = -1
			}
		}
		if code == wire.None && fp.LastFetchedEpoch > pt.epoch {
			code = wire.UnknownLeaderEpoch
		}
		if code == wire.None && fp.LastFetchedEpoch >= 0 {
			if d, ok := pt.divergence(fp.LastFetchedEpoch, fp.Offset); ok {
				r.Diverging = &d
				any = true
				resp.Parts = append(resp.Parts, r)
				continue
			}
		}
		if code == wire.None && (fp.Offset < pt.logStart || fp.Offset > pt.next) {
			code = wire.OffsetOutOfRange
		}
		if code != wire.None {
			r.Err = code
			any = true
			resp.Parts = append(resp.Parts, r)
			continue
		}
		i := sort.Search(len(pt.batches), func(i int) bool { return pt.batches[i].LastOffset() >= fp.Offset })
		for ; i < len(pt.batches); i++ {
			if len(r.Records) > 0 && len(r.Records)+len(pt.batches[i]) > int(fp.MaxBytes) {
				break
			}
			r.Records = append(r.Records, pt.batches[i]...)
		}
		if len(r.Records) > 0 {
			any = true
		}
		resp.Parts = append(resp.Parts, r)
	}
	return resp, any
}

// endOffsetForEpoch answers OffsetsForLeaderEpoch from the batches, as a
// real log's epoch cache does: the largest epoch <= epoch in the log and
// the first offset of the next higher one (or the log end); (-1, -1) if
// the log has no batch of an epoch that old.
func (pt *partition) endOffsetForEpoch(epoch int32) (int32, int64) {
	found, end := int32(-1), int64(-1)
	for _, b := range pt.batches {
		switch e := b.LeaderEpoch(); {
		case e <= epoch:
			found, end = e, pt.next
		case found >= 0:
			return found, b.BaseOffset()
		default:
			return -1, -1
		}
	}
	return found, end
}

// divergence checks a fetch at offset after a batch of lastEpoch as the
// broker does (log start 0).
func (pt *partition) divergence(lastEpoch int32, offset int64) (wire.EpochEndOffset, bool) {
	e, end := pt.endOffsetForEpoch(lastEpoch)
	switch {
	case e < 0 || end < 0:
		if offset > 0 {
			return wire.EpochEndOffset{Epoch: -1, EndOffset: 0}, true
		}
	case e < lastEpoch || end < offset:
		return wire.EpochEndOffset{Epoch: e, EndOffset: end}, true
	}
	return wire.EpochEndOffset{}, false
}

func (c *Cluster) listOffsets(addr string, req *wire.ListOffsetsRequest) *wire.ListOffsetsResponse {
	c.mu.Lock()
	defer c.mu.Unlock()
	resp := &wire.ListOffsetsResponse{}
	for _, lp := range req.Parts {
		r := wire.ListOffsetsPartitionResponse{Partition: lp.Partition, LeaderHint: -1}
		pt, code := c.partitionAtLocked(addr, req.Topic, lp.Partition)
		if pt != nil {
			r.LeaderHint = pt.leader
		}
		switch {
		case code != wire.None:
			r.Err = code
		case lp.Timestamp == wire.Earliest:
			r.Offset = pt.logStart
		case lp.Timestamp == wire.Latest && pt.hwUnknown:
			r.Err = wire.OffsetNotAvailable
		case lp.Timestamp == wire.Latest:
			r.Offset = pt.next
		case lp.Timestamp < 0:
			r.Err = wire.InvalidRequest
		default:
			r.Offset = pt.offsetForTimestamp(lp.Timestamp)
		}
		resp.Parts = append(resp.Parts, r)
	}
	return resp
}
