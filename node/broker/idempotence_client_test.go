package broker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

// serveClient makes node n answer what a real client needs besides the
// broker's own handlers: Metadata from the fake controller and
// InitProducerID from a cluster-wide counter.
func (c *testCluster) serveClient(n *testNode, pids *atomic.Int64) {
	c.serveMetadata(n)
	n.ep.Handle(wire.TypeInitProducerID, func(ctx context.Context, _ quic.Peer, fr quic.Frame) (quic.FrameType, any, error) {
		var req wire.InitProducerIDRequest
		if err := fr.Decode(&req); err != nil {
			return 0, nil, err
		}
		return wire.TypeInitProducerID, &wire.InitProducerIDResponse{ProducerID: pids.Add(1)}, nil
	})
}

// TestClientProducerExactlyOnceAcrossLeaderKills: the real idempotent
// producer (five requests in flight, small batches) writes payments while
// the partition leader is crashed three times (a new leader elected from
// the ISR, the victim restarted from what it had synced). Every payment is
// acknowledged, at the offset the log holds it at, in the order produced,
// and none is in the log twice.
func TestClientProducerExactlyOnceAcrossLeaderKills(t *testing.T) {
	c := newTestCluster(t, clusterOptions{memFS: true, maxWait: 50 * time.Millisecond, lagTime: 5 * time.Second})
	c.createPartition("payments", 0, []int32{1, 2, 3}, 1, 2)
	var pids atomic.Int64
	for _, n := range c.liveNodes() {
		c.serveClient(n, &pids)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newTestClient(ctx, t, c.addrs())
	if cl == nil {
		t.FailNow()
	}
	p, err := cl.NewProducer(client.ProducerConfig{BatchBytes: 600, Linger: time.Millisecond,
		RetryBackoff: 5 * time.Millisecond, RetryBackoffMax: 100 * time.Millisecond, DeliveryTimeout: 90 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	const total = 3000
	var (
		mu      sync.Mutex
		offsets = make([]int64, total)
		errs    []string
		acked   atomic.Int64
	)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for i := range total {
			r := &client.Record{Topic: "payments", Partition: 0, PartitionSet: true, Value: []byte(fmt.Sprintf("pay-%05d", i))}
			err := p.Produce(ctx, r, func(d client.Delivery) {
				mu.Lock()
				defer mu.Unlock()
				if d.Err != nil {
					errs = append(errs, fmt.Sprintf("pay-%05d: %v", i, d.Err))
					offsets[i] = -1
				} else {
					offsets[i] = d.Offset
				}
				acked.Add(1)
			})
			if err != nil {
				t.Errorf("produce %d: %v", i, err)
				return
			}
			if i%20 == 0 {
				time.Sleep(time.Millisecond) // spread the records over the disruptions
			}
		}
	}()
	var victim int32 = -1
	var victimDir string
	var victimFS *segment.MemFS
	for k := 1; k <= 3; k++ {
		waitFor(t, "progress", time.Minute, func() bool { return acked.Load() >= int64(total*k/4) })
		if victim >= 0 {
			n := c.startNodeFS(victim, victimDir, victimFS)
			c.serveClient(n, &pids)
			c.push(testKey)
			v := victim
			waitFor(t, "restarted node back in the ISR", 30*time.Second, func() bool {
				return slices.Contains(c.state(testKey).ISR, v)
			})
		}
		st := c.state(testKey)
		victim, victimDir = st.Leader, c.node(st.Leader).dir
		victimFS = c.crashNode(victim)
		if c.elect(testKey, victim) < 0 {
			t.Fatalf("no ISR member to elect (ISR %v)", st.ISR)
		}
	}
	<-produced
	if err := p.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(errs) > 0 {
		t.Errorf("%d payments failed, first: %s", len(errs), errs[0])
	}
	waitInSync(t, c, testKey)
	st := c.state(testKey)
	hw, _, _, _ := c.node(st.Leader).b.PartitionInfo("payments", 0)
	got := readAll(t, c.node(st.Leader).b.partition("payments", 0).log, hw)
	at := map[string]int64{}
	for off, v := range got {
		if prev, dup := at[v]; dup {
			t.Fatalf("%s written twice, at %d and %d", v, prev, off)
		}
		at[v] = off
	}
	last := int64(-1)
	for i, off := range offsets {
		v := fmt.Sprintf("pay-%05d", i)
		if off < 0 {
			continue
		}
		if got[off] != v {
			t.Fatalf("%s acknowledged at %d, the log has %q there", v, off, got[off])
		}
		if off <= last {
			t.Fatalf("%s acknowledged at %d, after an earlier payment at %d", v, off, last)
		}
		last = off
	}
	t.Logf("%d payments, hw %d, %d failed, leader %d epoch %d", total, hw, len(errs), st.Leader, st.LeaderEpoch)
}
