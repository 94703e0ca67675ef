package client

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// The same guarantees over real QUIC streams (requests really overtake each
// other there): lost answers and a leader move mid-stream, every record
// acknowledged once at the offset it is stored at, order kept per partition.
func TestProduceOverQUICWithFaults(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 3)
	var k atomic.Int64
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty == wire.TypeProduce && k.Add(1)%9 == 4 {
			return clienttest.Action{Kind: clienttest.DropResponse}
		}
		return clienttest.Action{}
	})
	if err := fc.Serve(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	c, err := New(testCtx(t), Config{Bootstrap: fc.Addrs(), Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 2048, Linger: time.Millisecond, RetryBackoff: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	d := newDeliveries()
	const n = 6000
	for i := 0; i < n; i++ {
		if i == n/2 {
			old, _ := fc.Leader("t", 1)
			fc.SetLeader("t", 1, old%3+1)
		}
		r := &Record{Topic: "t", Key: []byte(fmt.Sprintf("k%d", i%31)), Value: []byte(fmt.Sprintf("v%d", i))}
		if err := p.Produce(ctx, r, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, fc, "t", 3, d, n)

	// And read it all back through the consumer.
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cs.Close()
	if _, err := cs.AssignTopic(ctx, "t", SeekBeginning); err != nil {
		t.Fatal(err)
	}
	got := pollN(t, cs, n)
	if len(got) != n {
		t.Fatalf("consumed %d of %d", len(got), n)
	}
	for _, m := range got {
		var i int
		fmt.Sscanf(string(m.Value), "v%d", &i)
		if x := d.got[i]; x.Partition != m.Partition || x.Offset != m.Offset || string(m.Key) != fmt.Sprintf("k%d", i%31) {
			t.Fatalf("consumed %s=%s at %d/%d, acknowledged at %d/%d", m.Key, m.Value, m.Partition, m.Offset, x.Partition, x.Offset)
		}
	}
}
