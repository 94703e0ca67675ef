package broker

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/wire"
)

// Tests of the real idempotent client coming back after a quiet period in
// which the partition's replicas forgot its producer id (producer id expiry
// on an injected clock, Broker.ExpireProducers) or never had it (a replica
// that restarted at the leader's log start after retention deleted the
// producer's batches). Every delivery must succeed, the first produce after
// the quiet period must cost at most one extra Produce round trip (and no
// InitProducerID), and the log must hold every record once, in order.

// expiryRig is a 3-replica partition (min ISR 2) on an injected clock with a
// real client producing to it.
type expiryRig struct {
	t      *testing.T
	c      *testCluster
	clock  atomic.Int64 // ms
	pids   atomic.Int64 // InitProducerID answers
	p      *client.Producer
	ctx    context.Context
	sent   []string // values produced, in order
	offset []int64  // their acknowledged offsets
}

func newExpiryRig(t *testing.T, segBytes int64) *expiryRig {
	r := &expiryRig{t: t}
	r.clock.Store(time.Now().UnixMilli())
	// The replica lag time is on the same clock: longer than the jumps
	// (idle), or a jump made the followers look a day behind and the ISR
	// shrank under the first produce after it (NotEnoughReplicas).
	return r.start(clusterOptions{memFS: true, maxWait: 50 * time.Millisecond, lagTime: 100 * time.Hour,
		segBytes: segBytes, maxIndexBytes: 4096, now: func() time.Time { return time.UnixMilli(r.clock.Load()) }})
}

func (r *expiryRig) start(o clusterOptions) *expiryRig {
	t := r.t
	r.c = newTestCluster(t, o)
	r.c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	for _, n := range r.c.liveNodes() {
		r.c.serveClient(n, &r.pids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	r.ctx = ctx
	cl := newTestClient(ctx, t, r.c.addrs())
	if cl == nil {
		t.FailNow()
	}
	var err error
	r.p, err = cl.NewProducer(client.ProducerConfig{Linger: time.Millisecond, DeliveryTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.p.Close(context.Background()) })
	return r
}

// produce sends one record and waits for its delivery, which must succeed;
// it returns how long that took and how many Produce requests the live
// brokers handled meanwhile.
func (r *expiryRig) produce() (time.Duration, uint64) {
	r.t.Helper()
	before := r.produceRequests()
	v := fmt.Sprintf("pay-%03d", len(r.sent))
	start := time.Now()
	d, err := r.p.ProduceSync(r.ctx, &client.Record{Topic: "payments", Partition: 0, PartitionSet: true, Value: []byte(v)})
	took := time.Since(start)
	if err != nil {
		r.t.Fatalf("%s: %v", v, err)
	}
	r.sent = append(r.sent, v)
	r.offset = append(r.offset, d.Offset)
	return took, r.produceRequests() - before
}

func (r *expiryRig) produceRequests() uint64 {
	var n uint64
	for _, nd := range r.c.liveNodes() {
		n += nd.b.Stats().ProduceRequests
	}
	return n
}

// idle moves the clock past the expiration and expires the producer id on
// the given replicas (each on its own, as each replica's pass runs on its
// own clock).
func (r *expiryRig) idle(on ...int32) {
	r.t.Helper()
	r.clock.Add((DefaultProducerIDExpiration + time.Hour).Milliseconds())
	for _, id := range on {
		if n := r.c.node(id).b.ExpireProducers(context.Background()); n != 1 {
			r.t.Fatalf("node %d expired %d producer ids, want 1", id, n)
		}
	}
}

// firstAfterIdle produces the first record after the quiet period and
// checks it cost at most maxRequests Produce requests and no new producer id.
func (r *expiryRig) firstAfterIdle(maxRequests uint64) {
	r.t.Helper()
	pidsBefore := r.pids.Load()
	took, n := r.produce()
	r.t.Logf("first produce after the quiet period: %v, %d produce requests, %d InitProducerID", took, n, r.pids.Load()-pidsBefore)
	if n > maxRequests {
		r.t.Errorf("first produce after the quiet period took %d produce requests (%v), want at most %d", n, took, maxRequests)
	}
	if got := r.pids.Load() - pidsBefore; got != 0 {
		r.t.Errorf("first produce after the quiet period asked for %d new producer ids, want 0", got)
	}
}

// check waits for the replicas to agree and checks the leader's log holds
// every record once, at its acknowledged offset, in the order produced.
func (r *expiryRig) check() {
	r.t.Helper()
	waitInSync(r.t, r.c, testKey)
	st := r.c.state(testKey)
	hw, _, _, _ := r.c.node(st.Leader).b.PartitionInfo("payments", 0)
	got := readAll(r.t, r.c.node(st.Leader).b.partition("payments", 0).log, hw)
	seen := map[string]int64{}
	for off, v := range got {
		if !strings.HasPrefix(v, "pay-") {
			continue // another producer's
		}
		if prev, dup := seen[v]; dup {
			r.t.Fatalf("%s written twice, at %d and %d", v, prev, off)
		}
		seen[v] = off
	}
	last := int64(-1)
	for i, v := range r.sent {
		off := r.offset[i]
		if got[off] != v {
			r.t.Fatalf("%s acknowledged at %d, the log has %q there", v, off, got[off])
		}
		if off <= last {
			r.t.Fatalf("%s acknowledged at %d, after the previous record at %d", v, off, last)
		}
		last = off
	}
}

// TestClientProducerAfterItsIDExpiredEverywhere: a payment service produces,
// stays quiet past the producer id expiration on every replica, and
// produces again: the first record costs at most one refused request (the
// leader does not know the id), nothing fails, nothing is written twice.
func TestClientProducerAfterItsIDExpiredEverywhere(t *testing.T) {
	r := newExpiryRig(t, 0)
	for range 8 {
		r.produce()
	}
	waitInSync(t, r.c, testKey)
	r.idle(1, 2, 3)
	r.firstAfterIdle(2)
	for range 8 {
		r.produce()
	}
	r.check()
	// Quiet again, and back: the same once more.
	waitInSync(t, r.c, testKey)
	r.idle(1, 2, 3)
	r.firstAfterIdle(2)
	r.produce()
	r.check()
}

// TestClientProducerAfterItsIDExpiredOnTheBrokersOwnPasses: the same on
// the brokers' own clocks and retention passes (expiration 300 ms, a pass
// every 50 ms on each broker, each on its own ticker): once every replica
// has forgotten the producer id, the next record costs at most one refused
// request, and nothing fails, is lost or is written twice.
func TestClientProducerAfterItsIDExpiredOnTheBrokersOwnPasses(t *testing.T) {
	r := (&expiryRig{t: t}).start(clusterOptions{memFS: true, maxWait: 50 * time.Millisecond, lagTime: time.Minute,
		retentionCheck: 50 * time.Millisecond, producerIDExpiration: 300 * time.Millisecond})
	for range 5 {
		r.produce()
	}
	waitFor(t, "every replica expired the producer id", 10*time.Second, func() bool {
		for _, n := range r.c.liveNodes() {
			if n.b.Stats().ProducerIDsExpired == 0 {
				return false
			}
		}
		return true
	})
	r.firstAfterIdle(2)
	for range 5 {
		r.produce()
	}
	r.check()
}

// TestClientProducerAfterOnlyTheLeaderForgotIt: the leader's clock expired
// the producer id, the followers' did not. The client comes back (one
// refused request), then leadership moves to a follower that remembered
// the old sequence: it must accept what follows, not refuse it or take a
// restarted sequence for a retry of an old batch (a restart at sequence 0
// under the same producer epoch: its next batch, sequence 1, was answered
// as a duplicate of the old sequence 1, with that batch's offset).
func TestClientProducerAfterOnlyTheLeaderForgotIt(t *testing.T) {
	r := newExpiryRig(t, 0)
	for range 3 { // the followers remember all three batches, sequences 0-2
		r.produce()
	}
	waitInSync(t, r.c, testKey)
	r.idle(1)
	r.firstAfterIdle(2)
	waitInSync(t, r.c, testKey)
	r.c.electNode(testKey, 2)
	for range 8 {
		r.produce()
	}
	r.check()
}

// TestClientProducerAfterLeadershipMovedToAReplicaThatForgotIt: the
// followers expired the producer id, the leader did not; leadership then
// moves to one of the followers before the client comes back. The first
// record costs the leader change (NotLeader) and at most one refused
// request besides.
func TestClientProducerAfterLeadershipMovedToAReplicaThatForgotIt(t *testing.T) {
	r := newExpiryRig(t, 0)
	for range 8 {
		r.produce()
	}
	waitInSync(t, r.c, testKey)
	r.idle(2, 3)
	r.c.electNode(testKey, 2)
	r.firstAfterIdle(3)
	for range 8 {
		r.produce()
	}
	r.check()
}

// TestClientProducerAfterLeadershipMovedToAReplicaThatRemembers: the
// leader expired the producer id, a follower did not, and leadership moves
// to that follower before the client comes back: it carries on with its
// sequence (only the leader change costs a request).
func TestClientProducerAfterLeadershipMovedToAReplicaThatRemembers(t *testing.T) {
	r := newExpiryRig(t, 0)
	for range 8 {
		r.produce()
	}
	waitInSync(t, r.c, testKey)
	r.idle(1)
	r.c.electNode(testKey, 2)
	r.firstAfterIdle(2)
	for range 8 {
		r.produce()
	}
	r.check()
}

// TestClientProducerAfterRetentionDeletedItsBatches: while the producer is
// quiet, retention.bytes deletes the segments that held its batches on the
// replicas in the ISR (which keep its state: TestIdempotentRetryAfterRetention
// DeletedItsBatches). A replica that was down meanwhile comes back at the
// leader's log start, so it never saw the producer's batches, and becomes
// leader: the producer is unknown to it, and the client comes back at the
// cost of the leader change and one refused request, with nothing lost or
// written twice, also when leadership returns to a replica that remembers
// the old sequence.
func TestClientProducerAfterRetentionDeletedItsBatches(t *testing.T) {
	r := newExpiryRig(t, retentionSegBytes)
	c := r.c
	dir3 := c.node(3).dir
	c.stopNode(3)
	c.removeFromISR(testKey, 3)
	for range 8 {
		r.produce()
	}
	last := r.offset[len(r.offset)-1]
	produceN(t, c, 40, wire.AcksAll) // another producer's (non-idempotent) 1 KB batches
	waitInSync(t, c, testKey)
	c.setRetention(testKey, nil, ptr(2*retentionSegBytes))
	for _, id := range []int32{1, 2} {
		c.node(id).b.ApplyRetention(context.Background())
		if _, start, _ := infoOf(t, c, id); start <= last {
			t.Fatalf("node %d: log start %d, want the producer's batches (up to %d) deleted", id, start, last)
		}
	}
	r.sent, r.offset = nil, nil // the deleted ones are not in the log to check
	n3 := c.startNode(3, dir3)
	c.serveClient(n3, &r.pids)
	c.push(testKey)
	waitFor(t, "node 3 back in the ISR", 10*time.Second, func() bool { return slices.Contains(c.state(testKey).ISR, 3) })
	waitInSync(t, c, testKey)
	if got := producerStateOf(c.node(3)); strings.Contains(got, "pid 1 ") {
		t.Fatalf("node 3 knows the producer before it comes back: %s", got)
	}
	c.electNode(testKey, 3)
	r.firstAfterIdle(3) // NotLeader from the old leader, at most one refusal from node 3
	for range 4 {
		r.produce()
	}
	waitInSync(t, c, testKey)
	c.electNode(testKey, 1)
	for range 4 {
		r.produce()
	}
	r.check()
}
