package broker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/node/replica"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// manualClock is a broker clock (Config.Now) that moves only when set.
type manualClock struct{ ms atomic.Int64 }

func newManualClock(t time.Time) *manualClock {
	c := &manualClock{}
	c.set(t)
	return c
}

func (c *manualClock) now() time.Time  { return time.UnixMilli(c.ms.Load()) }
func (c *manualClock) set(t time.Time) { c.ms.Store(t.UnixMilli()) }

// describeProducersOn sends a DescribeProducersRequest to node id.
func describeProducersOn(t *testing.T, c *testCluster, id int32, req wire.DescribeProducersRequest) wire.DescribeProducersResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var resp wire.DescribeProducersResponse
	if err := c.client.Call(ctx, c.node(id).addr, wire.TypeDescribeProducers, req, &resp); err != nil {
		t.Fatalf("describe producers on node %d: %v", id, err)
	}
	return resp
}

// epochBatch is an idempotent batch of producer pid at epoch, from
// sequence seq, its records stamped ts.
func epochBatch(pid int64, epoch int16, seq int32, ts time.Time, vals ...string) []byte {
	bd := segment.NewBuilder(segment.BuilderOptions{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq})
	for _, v := range vals {
		bd.Add(ts.UnixMilli(), nil, []byte(v), nil)
	}
	return slices.Clone([]byte(bd.Build()))
}

// producersOf is the one partition of resp, which must have no error.
func producersOf(t *testing.T, what string, resp wire.DescribeProducersResponse) wire.DescribeProducersPartition {
	t.Helper()
	if resp.Err != wire.None || len(resp.Parts) != 1 || resp.Parts[0].Err != wire.None {
		t.Fatalf("%s: %+v", what, resp)
	}
	return resp.Parts[0]
}

// TestDescribeProducers: the leader lists each idempotent producer it
// remembers (not the non-idempotent batch) with its epoch, last sequence,
// last batch's offsets, batches remembered and time to expiry; a follower
// answers NotLeader naming the leader, or its own copy (the same
// producers) when any replica may answer; a partition not held here is
// UnknownTopicOrPartition.
func TestDescribeProducers(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	clock := newManualClock(t0)
	c := newTestCluster(t, clusterOptions{nodes: 2, maxWait: 50 * time.Millisecond, now: clock.now})
	c.createPartition("payments", 0, []int32{1, 2}, 1, 2)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, epochBatch(5, 0, 0, t0, "a", "b")), 0)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, epochBatch(5, 0, 2, t0, "c")), 2)
	wantOffset(t, "producer 6", mustProduce(t, c, wire.AcksAll, epochBatch(6, 3, 0, t0.Add(time.Minute), "d", "e", "f")), 3)
	wantOffset(t, "no producer id", mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"g"})), 6)
	waitInSync(t, c, testKey)
	clock.set(t0.Add(time.Hour))

	day := (24 * time.Hour).Milliseconds()
	want := []wire.ProducerState{
		{ProducerID: 5, ProducerEpoch: 0, LastSequence: 2, LastTimestamp: t0.UnixMilli(), FirstOffset: 2, LastOffset: 2, Batches: 2,
			ExpiresInMs: day - time.Hour.Milliseconds()},
		{ProducerID: 6, ProducerEpoch: 3, LastSequence: 2, LastTimestamp: t0.Add(time.Minute).UnixMilli(), FirstOffset: 3, LastOffset: 5, Batches: 1,
			ExpiresInMs: day - 59*time.Minute.Milliseconds()},
	}
	lead := producersOf(t, "leader", describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0}}))
	if !lead.IsLeader || lead.LeaderHint != 1 || lead.ExpirationMs != day || !reflect.DeepEqual(lead.Producers, want) {
		t.Fatalf("leader: %+v\nwant producers %+v", lead, want)
	}
	// Every partition led here when none is named.
	if all := describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments"}); !reflect.DeepEqual(all.Parts, []wire.DescribeProducersPartition{lead}) {
		t.Fatalf("leader, partitions unnamed: %+v", all)
	}

	resp := describeProducersOn(t, c, 2, wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0}})
	if len(resp.Parts) != 1 || resp.Parts[0].Err != wire.NotLeader || resp.Parts[0].LeaderHint != 1 || resp.Parts[0].Producers != nil {
		t.Fatalf("follower: %+v, want NotLeader naming node 1", resp)
	}
	if resp := describeProducersOn(t, c, 2, wire.DescribeProducersRequest{Topic: "payments"}); resp.Err != wire.None || len(resp.Parts) != 0 {
		t.Fatalf("follower, partitions unnamed: %+v, want none (it leads none)", resp)
	}
	follower := producersOf(t, "follower, any replica", describeProducersOn(t, c, 2, wire.DescribeProducersRequest{Topic: "payments", AnyReplica: true}))
	if follower.IsLeader || follower.LeaderHint != 1 || !reflect.DeepEqual(follower.Producers, want) {
		t.Fatalf("follower, any replica: %+v\nwant producers %+v", follower, want)
	}

	// A response's budget of producers: the lowest ids, the rest counted;
	// once spent, the state is not copied.
	leader := c.node(1).b.partition("payments", 0)
	out := wire.DescribeProducersPartition{}
	leader.describeProducers(&out, false, clock.now(), 24*time.Hour, 1)
	if !reflect.DeepEqual(out.Producers, want[:1]) || out.Omitted != 1 {
		t.Fatalf("a budget of one producer: %+v; want producer 5, 1 omitted", out)
	}
	if allocs := testing.AllocsPerRun(10, func() {
		out = wire.DescribeProducersPartition{}
		leader.describeProducers(&out, false, clock.now(), 24*time.Hour, 0)
	}); allocs != 0 || len(out.Producers) != 0 || out.Omitted != 2 || out.Err != wire.None {
		t.Fatalf("a budget spent: %+v, %v allocations; want none listed, 2 omitted, nothing copied", out, allocs)
	}

	resp = describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0, 7}})
	if len(resp.Parts) != 2 || resp.Parts[1].Partition != 7 || resp.Parts[1].Err != wire.UnknownTopicOrPartition {
		t.Fatalf("partition 7: %+v, want UnknownTopicOrPartition", resp)
	}
	resp = describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments", Partitions: make([]int32, wire.MaxDescribeProducersParts+1)})
	if resp.Err != wire.InvalidRequest || len(resp.Parts) != 0 {
		t.Fatalf("too many partitions: %+v, want InvalidRequest", resp)
	}
}

// TestDescribeProducersAfterRestartAndExpiry: the producers listed survive
// a restart, read from the producer snapshot (their last timestamps too)
// or, without one, rebuilt from the log (each batch then counts as seen
// at the replay), and an expired producer is no longer listed.
func TestDescribeProducersAfterRestartAndExpiry(t *testing.T) {
	t0 := time.UnixMilli(1_800_000_000_000)
	clock := newManualClock(t0)
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 50 * time.Millisecond, now: clock.now})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, epochBatch(5, 1, 0, t0, "a")), 0)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, epochBatch(5, 1, 1, t0, "b", "c")), 1)
	wantOffset(t, "producer 9", mustProduce(t, c, wire.AcksAll, epochBatch(9, 0, 0, t0, "d")), 3)
	// A batch moves into the snapshotted state at the next append after
	// the HW passed it: this one takes producer 9's there.
	wantOffset(t, "no producer id", mustProduce(t, c, wire.AcksAll, buildBatch(-1, -1, []string{"x"})), 4)
	describe := func(what string) []wire.ProducerState {
		t.Helper()
		return producersOf(t, what, describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0}})).Producers
	}
	before := describe("before the restart")
	if len(before) != 2 || before[0].ProducerID != 5 || before[0].LastSequence != 2 || before[0].Batches != 2 || before[1].ProducerID != 9 {
		t.Fatalf("before the restart: %+v", before)
	}
	restart := func(dropSnapshot bool) {
		t.Helper()
		dir := c.node(1).dir
		c.stopNode(1) // a clean close writes the producer snapshot
		if dropSnapshot {
			if err := os.Remove(filepath.Join(dir, "payments-0", ProducerSnapshotFile)); err != nil {
				t.Fatal(err)
			}
		}
		c.startNode(1, dir)
		c.push(testKey)
		waitFor(t, "node 1 leads again", 10*time.Second, func() bool {
			p := c.node(1).b.partition(testKey.topic, testKey.partition)
			return p != nil && p.checkLeadership(1) == replica.OK
		})
	}
	clock.set(t0.Add(time.Hour))
	restart(false)
	want := slices.Clone(before)
	for i := range want {
		want[i].ExpiresInMs -= time.Hour.Milliseconds()
	}
	if got := describe("restarted from the snapshot"); !reflect.DeepEqual(got, want) {
		t.Fatalf("restarted from the snapshot:\n%+v\nwant\n%+v", got, want)
	}
	restart(true)
	for i := range want { // replayed: seen now
		want[i].LastTimestamp, want[i].ExpiresInMs = t0.Add(time.Hour).UnixMilli(), (24 * time.Hour).Milliseconds()
	}
	if got := describe("rebuilt from the log"); !reflect.DeepEqual(got, want) {
		t.Fatalf("rebuilt from the log:\n%+v\nwant\n%+v", got, want)
	}

	wantOffset(t, "producer 9 again", mustProduce(t, c, wire.AcksAll, epochBatch(9, 0, 1, t0.Add(2*time.Hour), "e")), 5)
	clock.set(t0.Add(25 * time.Hour))
	if n := c.node(1).b.ExpireProducers(context.Background()); n != 1 {
		t.Fatalf("expired %d producers, want 1 (producer 5)", n)
	}
	got := describe("after expiry")
	if len(got) != 1 || got[0].ProducerID != 9 || got[0].LastSequence != 1 || got[0].ExpiresInMs != time.Hour.Milliseconds() {
		t.Fatalf("after expiry: %+v, want producer 9 alone, an hour from expiry", got)
	}
}

// TestDescribeProducersAuthorized: the request needs describe on the
// topic; a refusal answers the whole request with the authorizer's error
// and lists nothing.
func TestDescribeProducersAuthorized(t *testing.T) {
	var asked atomic.Value
	deny := func(_ quic.Peer, op, topic string) *wire.Error {
		if op == wire.OpWrite {
			return nil
		}
		asked.Store(op + " " + topic)
		return &wire.Error{Code: wire.TopicAuthorizationFailed, Message: "principal User:x may not " + op + " topic " + topic}
	}
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 50 * time.Millisecond, authorize: deny})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, epochBatch(5, 0, 0, time.Now(), "a")), 0)
	resp := describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0}})
	if resp.Err != wire.TopicAuthorizationFailed || !strings.Contains(resp.Message, "may not describe") || len(resp.Parts) != 0 {
		t.Fatalf("refused: %+v", resp)
	}
	if a, _ := asked.Load().(string); a != "describe payments" {
		t.Fatalf("authorizer asked %q, want describe payments", a)
	}
}

// TestDescribeProducersStateUnknown: a partition whose producer state
// could not be rebuilt says so (KafkaStorageError and why), without
// listing the state it no longer trusts.
func TestDescribeProducersStateUnknown(t *testing.T) {
	c := newTestCluster(t, clusterOptions{nodes: 1, maxWait: 50 * time.Millisecond})
	c.createPartition("payments", 0, []int32{1}, 1, 1)
	wantOffset(t, "producer 5", mustProduce(t, c, wire.AcksAll, epochBatch(5, 0, 0, time.Now(), "a")), 0)
	p := c.node(1).b.partition("payments", 0)
	p.appendMu.Lock()
	p.producers.unknown = errors.New("read segment 0: input/output error")
	p.appendMu.Unlock()
	resp := describeProducersOn(t, c, 1, wire.DescribeProducersRequest{Topic: "payments", Partitions: []int32{0}})
	if len(resp.Parts) != 1 || resp.Parts[0].Err != wire.KafkaStorageError || resp.Parts[0].Producers != nil ||
		!strings.Contains(resp.Parts[0].Message, "input/output error") {
		t.Fatalf("unknown state: %+v", resp)
	}
}

// TestProducerStateDescribeExpiry: no time to expiry for a producer with a
// batch at or above the HW (expiry skips it) or an unknown last timestamp;
// one past its expiration shows 0 until the next check forgets it.
func TestProducerStateDescribeExpiry(t *testing.T) {
	s := newProducerState()
	s.update(1, 0, 0, 0, 0, 1000)
	s.update(3, 0, 0, 0, 1, 1000) // below the HW: only its unknown timestamp keeps it from expiring
	s.update(2, 0, 0, 1, 2, 1000) // at and above the HW
	s.producers[3].lastTs = -1
	got := s.describe(5000, 3000, 2)
	slices.SortFunc(got, func(a, b wire.ProducerState) int { return int(a.ProducerID - b.ProducerID) })
	if len(got) != 3 || got[0].ExpiresInMs != 0 || got[1].ExpiresInMs != -1 || got[2].ExpiresInMs != -1 {
		t.Fatalf("%+v", got)
	}
	if got[1].FirstOffset != 2 || got[1].LastOffset != 3 || got[1].LastSequence != 1 {
		t.Fatalf("producer 2: %+v", got[1])
	}
	if len(s.describe(0, 3000, 2000)) != 3 || unknownProducerState(errors.New("x")).describe(0, 1, 0) != nil {
		t.Fatal("an unknown state listed producers, or a known one none")
	}
}
