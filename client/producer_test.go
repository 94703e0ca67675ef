package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/segment"
	"paymentlog/wire"
)

func TestProduceKeyedExactlyOnce(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("payments", 3)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	d := produceN(t, p, "payments", n, 50)
	checkExactlyOnce(t, fc, "payments", 3, d, n)
	for i := 0; i < n; i++ {
		if want := KeyPartition([]byte(fmt.Sprintf("k%d", i%50)), 3); d.got[i].Partition != want {
			t.Fatalf("record %d on partition %d, want %d (key hash)", i, d.got[i].Partition, want)
		}
	}
}

func TestProduceBatches(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Hour, BatchBytes: 4096})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000 // ~50 bytes each: about 13 batches of 4 KiB
	d := produceN(t, p, "t", n, 0)
	checkExactlyOnce(t, fc, "t", 1, d, n)
	reqs := fc.Calls(wire.TypeProduce)
	if reqs < 5 || reqs > 30 {
		t.Fatalf("%d Produce requests for %d records in 4 KiB batches", reqs, n)
	}
}

func TestProduceLingerSendsPartialBatch(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ch := make(chan Delivery, 1)
	if err := p.Produce(testCtx(t), &Record{Topic: "t", Value: []byte("x")}, func(d Delivery) { ch <- d }); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-ch:
		if d.Err != nil || d.Offset != 0 {
			t.Fatalf("delivery %+v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a lone record was never sent")
	}
}

// Requests overtake each other (random delays before the leader handles
// them): OutOfOrderSequence answers must be resolved by resending in order.
func TestProduceReorderedRequestsKeepOrder(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty == wire.TypeProduce {
			return clienttest.Action{Delay: time.Duration(rand.IntN(3000)) * time.Microsecond}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 512, Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	d := produceN(t, p, "t", n, 0)
	checkExactlyOnce(t, fc, "t", 2, d, n)
}

// Answers are lost after the leader appended: the retry of the same bytes
// must get the original offsets, not a second copy.
func TestProduceLostAcksNoDuplicates(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 3)
	var k atomic.Int64
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty != wire.TypeProduce {
			return clienttest.Action{}
		}
		switch k.Add(1) % 7 {
		case 2:
			return clienttest.Action{Kind: clienttest.DropResponse}
		case 5:
			return clienttest.Action{Kind: clienttest.DropRequest}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 1024, Linger: time.Millisecond, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	d := produceN(t, p, "t", n, 10)
	checkExactlyOnce(t, fc, "t", 3, d, n)
}

// The leader moves while requests are outstanding and the old leader goes
// silent (a killed process): the producer must notice from the metadata,
// abandon the requests and deliver everything at the new leader, once.
func TestProduceLeaderDiesWhileInFlight(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	var dead atomic.Value // address of the dead broker
	dead.Store("")
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if addr == dead.Load().(string) {
			return clienttest.Action{Kind: clienttest.Hang}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 1024, Linger: time.Millisecond, LeaderCheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	d := newDeliveries()
	const n = 4000
	start := time.Now()
	for i := 0; i < n; i++ {
		if i == n/2 {
			old, _ := fc.Leader("t", 0)
			dead.Store(fc.Addrs()[old-1])
			go func() {
				time.Sleep(30 * time.Millisecond) // the controller notices a while later
				fc.SetLeader("t", 0, old%3+1)
			}()
		}
		if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte(fmt.Sprintf("v%d", i))}, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("took %v: requests to the dead leader were not abandoned", el)
	}
	checkExactlyOnce(t, fc, "t", 1, d, n)
}

// Requests abandoned because the metadata already names a new leader go to
// it at once: no retry backoff (30 s here, so the old behaviour would blow
// the deadline below) and no further metadata round trip.
func TestProduceResendsAtOnceToAMovedLeader(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	old, _ := fc.Leader("t", 0)
	deadAddr := fc.Addrs()[old-1]
	reached := make(chan struct{}, 1)
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if addr == deadAddr && ty == wire.TypeProduce {
			select {
			case reached <- struct{}{}:
			default:
			}
			return clienttest.Action{Kind: clienttest.Hang}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	ctx, p, d := produceFirst(t, c, ProducerConfig{Linger: time.Millisecond, LeaderCheckInterval: 20 * time.Millisecond,
		RetryBackoff: 30 * time.Second, RetryBackoffMax: 30 * time.Second})
	moveLeaderAndDeliver(ctx, t, fc, p, reached, old%3+1, 10*time.Second, "retry backoff 30 s", d, 1)
}

// The leader dies and it is also the node the client asks for metadata
// first: the leader check's refresh asks the next node after half the check
// interval, so finding the new leader does not wait out the hedge delay
// (10 s here) on the dead one.
func TestLeaderCheckDoesNotWaitOnADeadLeader(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	fc.SetLeader("t", 0, 1)
	deadAddr := fc.Addrs()[0] // the first bootstrap address: where metadata comes from
	var dead atomic.Bool
	reached := make(chan struct{}, 1)
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if addr != deadAddr || !dead.Load() {
			return clienttest.Action{}
		}
		if ty == wire.TypeProduce {
			select {
			case reached <- struct{}{}:
			default:
			}
		}
		return clienttest.Action{Kind: clienttest.Hang}
	})
	c := newWithCaller(Config{Bootstrap: fc.Addrs(), HedgeDelay: 10 * time.Second, Logger: testLogger(t)}, fc)
	t.Cleanup(func() { c.Close(context.Background()) })
	ctx, p, d := produceFirst(t, c, ProducerConfig{Linger: time.Millisecond, LeaderCheckInterval: 20 * time.Millisecond})
	if err := p.Flush(ctx); err != nil { // metadata now comes from the first node
		t.Fatal(err)
	}
	dead.Store(true)
	if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("v1")}, d.cb(1)); err != nil {
		t.Fatal(err)
	}
	moveLeaderAndDeliver(ctx, t, fc, p, reached, 2, 5*time.Second, "hedge delay 10 s", d, 2)
}

// produceFirst starts a producer with cfg and produces record 0 ("v0") to
// topic t.
func produceFirst(t *testing.T, c *Client, cfg ProducerConfig) (context.Context, *Producer, *deliveries) {
	t.Helper()
	p, err := c.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	d := newDeliveries()
	if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("v0")}, d.cb(0)); err != nil {
		t.Fatal(err)
	}
	return ctx, p, d
}

// moveLeaderAndDeliver waits until a produce request reached the (hung)
// leader of t/0, makes newLeader lead it and demands that the producer
// delivers its n records there, exactly once, within d (which the old
// behaviour, named by why, would blow).
func moveLeaderAndDeliver(ctx context.Context, t *testing.T, fc *clienttest.Cluster, p *Producer, reached <-chan struct{},
	newLeader int32, d time.Duration, why string, dl *deliveries, n int) {
	t.Helper()
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the request never reached the leader")
	}
	fc.SetLeader("t", 0, newLeader)
	fctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if err := p.Flush(fctx); err != nil {
		t.Fatalf("not delivered at the new leader within %v (%s): %v", d, why, err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, fc, "t", 1, dl, n)
}

// A new leader lacks the last batches the old one had written (never
// replicated, never acknowledged): the producer's resends hit
// OutOfOrderSequence until the missing batches are resent in order.
func TestProduceLeaderChangeLosesUnackedBatches(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	var mu sync.Mutex
	armed, swallowed := false, 0
	var acked int64
	failedOver := make(chan struct{})
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		mu.Lock()
		defer mu.Unlock()
		if ty != wire.TypeProduce || !armed {
			return clienttest.Action{}
		}
		// The old leader appends but its answers are lost; after 8 of
		// them it fails over to a replica that has only part of its tail.
		swallowed++
		if swallowed == 8 {
			armed = false
			go func() {
				defer close(failedOver)
				time.Sleep(5 * time.Millisecond)
				fc.TruncateLog("t", 0, acked+7)
				old, _ := fc.Leader("t", 0)
				fc.SetLeader("t", 0, old%3+1)
			}()
		}
		return clienttest.Action{Kind: clienttest.DropResponse}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 256, Linger: time.Millisecond, RetryBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	d := newDeliveries()
	const n = 2000
	for i := 0; i < n; i++ {
		if i == n/2 {
			if err := p.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			acked = fc.LogEnd("t", 0)
			armed = true
			mu.Unlock()
		}
		if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte(fmt.Sprintf("v%d", i))}, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	<-failedOver
	checkExactlyOnce(t, fc, "t", 1, d, n)
}

// NotEnoughReplicas and NotLeader refusals are retried; the log ends up exact.
func TestProduceRetriesRetriableRefusals(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 2)
	var k atomic.Int64
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty != wire.TypeProduce {
			return clienttest.Action{}
		}
		switch k.Add(1) % 5 {
		case 1:
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.NotEnoughReplicas}
		case 3:
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.NotLeader}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 512, Linger: time.Millisecond, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1500
	d := produceN(t, p, "t", n, 0)
	checkExactlyOnce(t, fc, "t", 2, d, n)
}

// A batch refused for good fails its records only; later batches are
// re-sequenced under a new producer id and delivered.
func TestProduceTerminalErrorFailsOnlyThatBatch(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	var once atomic.Bool
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty == wire.TypeProduce && once.CompareAndSwap(false, true) {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.CorruptMessage}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	first, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte("bad")})
	if ErrorCode(err) != wire.CorruptMessage || first.Err == nil {
		t.Fatalf("first record: %v, want CorruptMessage", err)
	}
	var de *DeliveryError
	if !errors.As(err, &de) || de.Unknown {
		t.Fatalf("error %v: want a definitive *DeliveryError", err)
	}
	for i := 0; i < 10; i++ {
		d, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte(fmt.Sprintf("ok%d", i))})
		if err != nil || d.Offset != int64(i) {
			t.Fatalf("record %d: %+v %v", i, d, err)
		}
	}
	p.Close(ctx)
}

func TestProduceDeliveryTimeout(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	fc.SetLeader("t", 0, -1) // offline
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{DeliveryTimeout: 200 * time.Millisecond, RetryBackoff: 10 * time.Millisecond, RetryBackoffMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.ProduceSync(testCtx(t), &Record{Topic: "t", Value: []byte("x")})
	if !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("got %v, want ErrDeliveryTimeout", err)
	}
	p.Close(context.Background())
}

func TestProduceUnknownTopicFailsFast(t *testing.T) {
	fc := clienttest.New(1)
	c := mustFakeClient(t, fc)
	p, _ := c.NewProducer(ProducerConfig{MetadataWait: 100 * time.Millisecond})
	defer p.Close(context.Background())
	err := p.Produce(testCtx(t), &Record{Topic: "nope", Value: []byte("x")}, nil)
	if ErrorCode(err) != wire.UnknownTopicOrPartition {
		t.Fatalf("got %v", err)
	}
}

func TestProduceRecordTooLarge(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, _ := c.NewProducer(ProducerConfig{MaxRecordBytes: 1000})
	defer p.Close(context.Background())
	var tl *RecordTooLargeError
	if err := p.Produce(testCtx(t), &Record{Topic: "t", Value: make([]byte, 2000)}, nil); !errors.As(err, &tl) {
		t.Fatalf("got %v", err)
	}
	// MaxRecordBytes counts the key, value and headers, not the batch's
	// framing around them: a record of exactly the limit is taken.
	hdr := []segment.RecordHeader{{Key: "h", Value: make([]byte, 99)}}
	if _, err := p.ProduceSync(testCtx(t), &Record{Topic: "t", Key: make([]byte, 100), Value: make([]byte, 800), Headers: hdr}); err != nil {
		t.Fatalf("record of exactly MaxRecordBytes: %v", err)
	}
	err := p.Produce(testCtx(t), &Record{Topic: "t", Key: make([]byte, 100), Value: make([]byte, 801), Headers: hdr}, nil)
	if !errors.As(err, &tl) || tl.Size != 1001 || tl.Max != 1000 {
		t.Fatalf("record of MaxRecordBytes+1: %v", err)
	}
}

func TestCloseFailsWhatCannotBeDelivered(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.SetLeader("t", 0, -1)
	c := mustFakeClient(t, fc)
	p, _ := c.NewProducer(ProducerConfig{})
	d := newDeliveries()
	for i := 0; i < 10; i++ {
		if err := p.Produce(testCtx(t), &Record{Topic: "t", Value: []byte("x")}, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close: %v", err)
	}
	for i := 0; i < 10; i++ {
		if d.n[i] != 1 || !errors.Is(d.got[i].Err, ErrProducerClosed) {
			t.Fatalf("record %d: %d callbacks, %v", i, d.n[i], d.got[i].Err)
		}
	}
	if err := p.Produce(testCtx(t), &Record{Topic: "t", Value: []byte("x")}, nil); !errors.Is(err, ErrProducerClosed) {
		t.Fatalf("produce after close: %v", err)
	}
}

func TestProduceHeadersAndNilKeyRoundTrip(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, _ := c.NewProducer(ProducerConfig{})
	ctx := testCtx(t)
	hdr := []segment.RecordHeader{{Key: "trace", Value: []byte("abc")}}
	if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte{}, Headers: hdr}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Key: []byte{}, Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	p.Close(ctx)
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 50 * time.Millisecond})
	defer cs.Close()
	cs.Assign([]TopicPartition{{"t", 0}}, SeekBeginning)
	msgs := pollN(t, cs, 2)
	if msgs[0].Key != nil || msgs[0].Value == nil || len(msgs[0].Value) != 0 || len(msgs[0].Headers) != 1 || string(msgs[0].Headers[0].Value) != "abc" {
		t.Fatalf("record 0: %+v", msgs[0])
	}
	if msgs[1].Key == nil || len(msgs[1].Key) != 0 {
		t.Fatalf("record 1: empty key became %v", msgs[1].Key)
	}
}

// Two batches are written but both answers are lost; the first one's resend
// is then refused for good (here InvalidRequest, what a broker that is no
// longer a replica answers). The first batch is in the log, so its failure
// must say it may have been written (it used to be reported as certainly not
// written: an application would send that payment again). Neither batch may
// end up in the log twice.
func TestProduceRefusalAfterLostAnswerIsNotDefinitive(t *testing.T) {
	produceTwoWrittenThenRefused(t, clienttest.Action{Kind: clienttest.DropResponse}, AcksAll)
}

// A batch refused for good (certainly not written) leaves a sequence gap:
// the next batch must go out under a fresh producer id at once, not under the
// old one, to be refused with OutOfOrderSequence three times with retry
// backoffs in between (2 s each here) before the sequence is restarted.
func TestProduceRestartsSequenceAtOnceAfterDefinitiveFailure(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	var refused atomic.Bool
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty == wire.TypeProduce && refused.CompareAndSwap(false, true) {
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.CorruptMessage}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: 2 * time.Second, RetryBackoffMax: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := testCtx(t)
	if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte("bad")}); ErrorCode(err) != wire.CorruptMessage {
		t.Fatalf("first record: %v, want CorruptMessage", err)
	}
	before := fc.Calls(wire.TypeProduce)
	sctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	d, err := p.ProduceSync(sctx, &Record{Topic: "t", Value: []byte("ok")})
	if err != nil || d.Offset != 0 {
		t.Fatalf("record after the failed one: %+v %v (%d produce requests)", d, err, fc.Calls(wire.TypeProduce)-before)
	}
	if n := fc.Calls(wire.TypeProduce) - before; n != 1 {
		t.Fatalf("%d produce requests for one record after the failure, want 1", n)
	}
}

// Flush waits for the records produced before it, not for a moment when
// nothing at all is outstanding: with another goroutine producing without
// pause there is no such moment, and Flush never returned.
func TestFlushUnderConcurrentProduceReturns(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.InterceptProduce(clienttest.Action{Delay: 2 * time.Millisecond})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	var first atomic.Int64 // deliveries of the records produced before Flush
	for i := 0; i < 100; i++ {
		if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("before")}, func(d Delivery) {
			if d.Err == nil {
				first.Add(1)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("during")}, nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = p.Flush(fctx)
	close(stop)
	<-done
	if err != nil {
		t.Fatalf("flush with a concurrent producer: %v", err)
	}
	if n := first.Load(); n != 100 {
		t.Fatalf("flush returned with %d of the 100 records produced before it delivered", n)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// A leader appends two batches, then loses its leadership while they wait
// for the ISR and answers both with NotLeader (the replica fails parked
// requests so). The first one's resend is refused for good. Both batches are
// in the log: the first must be reported as possibly written, and the second
// must not be re-sequenced under a new producer id and written again.
// acks=1 too: a leader answers NotLeader after the local flush when its
// leadership ended since the append.
func TestProduceNotLeaderAfterAppendIsNotDefinitive(t *testing.T) {
	for _, acks := range []Acks{AcksAll, AcksLeader} {
		t.Run(fmt.Sprint(acks), func(t *testing.T) {
			produceTwoWrittenThenRefused(t, clienttest.Action{Kind: clienttest.HandleThenRefuse, Code: wire.NotLeader}, acks)
		})
	}
}

// produceTwoWrittenThenRefused is the scenario of the two tests above:
// batches A and B (one record each, both in flight at once) are both
// written, both first attempts get answer instead of their offsets, and A's
// resend is refused for good with InvalidRequest. Each must be in the log
// once, A's failure must say it may have been written, and B must succeed or
// say the same.
func produceTwoWrittenThenRefused(t *testing.T, answer clienttest.Action, acks Acks) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	var reqs atomic.Int64
	aSent, bSent := make(chan struct{}), make(chan struct{})
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty != wire.TypeProduce {
			return clienttest.Action{}
		}
		switch reqs.Add(1) {
		case 1: // A: written once B is in flight
			close(aSent)
			<-bSent
			return answer
		case 2: // B: written after A
			close(bSent)
			deadline := time.Now().Add(10 * time.Second)
			for fc.LogEnd("t", 0) < 1 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond) // waits for A's append: a condition with a deadline
			}
			return answer
		case 3: // A's resend
			return clienttest.Action{Kind: clienttest.Refuse, Code: wire.InvalidRequest}
		}
		return clienttest.Action{}
	})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 100, Linger: time.Millisecond, RetryBackoff: time.Millisecond, Acks: acks})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	d := newDeliveries()
	val := func(s string) []byte { return []byte(s + strings.Repeat(".", 60)) }
	if err := p.Produce(ctx, &Record{Topic: "t", Value: val("A")}, d.cb(0)); err != nil {
		t.Fatal(err)
	}
	<-aSent
	if err := p.Produce(ctx, &Record{Topic: "t", Value: val("B")}, d.cb(1)); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range fc.Records("t", 0) {
		count[string(r.Value[:1])]++
	}
	if count["A"] != 1 || count["B"] != 1 {
		t.Fatalf("log holds A %d times and B %d times, want once each", count["A"], count["B"])
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var de *DeliveryError
	if a := d.got[0]; a.Err == nil || !errors.As(a.Err, &de) || !de.Unknown {
		t.Fatalf("A (in the log) failed with %v: want a DeliveryError saying it may have been written", a.Err)
	}
	if b := d.got[1]; b.Err != nil && (!errors.As(b.Err, &de) || !de.Unknown) {
		t.Fatalf("B (in the log) failed with %v: want success or 'may have been written'", b.Err)
	}
}

// A backlog of batches past their delivery deadline is failed in one pass
// of the partition's loop, not one batch per pass (each pass at least a
// millisecond apart). pump takes the time as an argument: the test drives
// one pass at a moment after every deadline.
func TestExpiredBatchesFailInOnePass(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.SetLeader("t", 0, -1) // offline: nothing is sent
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 100, Linger: time.Hour, DeliveryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := testCtx(t)
	pp := newPartProducer(p, "t", 0) // driven by the test alone: no run goroutine
	defer pp.abort()
	const n = 50
	d := newDeliveries()
	start := time.Now()
	for i := range n {
		r := &Record{Topic: "t", Value: []byte(fmt.Sprintf("%03d%s", i, strings.Repeat(".", 200)))}
		size := recordSize(r)
		gen, err := p.budget.acquire(ctx, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		pp.append(r, start.UnixMilli(), size, gen, deliveryFunc(d.cb(i))) // one batch each: larger than BatchBytes
	}
	pp.pump(start.Add(2 * time.Minute))
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) != n {
		t.Fatalf("one pass after every deadline failed %d of %d expired batches", len(d.got), n)
	}
	for i := range n {
		if !errors.Is(d.got[i].Err, ErrDeliveryTimeout) || d.n[i] != 1 {
			t.Fatalf("record %d: %d callbacks, err %v; want one ErrDeliveryTimeout", i, d.n[i], d.got[i].Err)
		}
	}
	if len(pp.queue) != 0 {
		t.Fatalf("%d batches left queued", len(pp.queue))
	}
}

// While a batch is in flight (here: its request hangs), the batches queued
// behind it that pass their deadline are failed at once; the one in flight
// is not (it may be written): its answer decides.
func TestExpiredQueuedBatchesFailWhileOneIsInFlight(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.InterceptProduce(clienttest.Action{Kind: clienttest.Hang})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{BatchBytes: 100, Linger: time.Hour, DeliveryTimeout: time.Minute, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := testCtx(t)
	if _, err := c.PartitionCount(ctx, "t"); err != nil { // metadata in hand: pump finds the leader
		t.Fatal(err)
	}
	pp := newPartProducer(p, "t", 0) // driven by the test alone: no run goroutine
	defer pp.abort()
	const n = 10
	d := newDeliveries()
	start := time.Now()
	for i := range n {
		r := &Record{Topic: "t", Value: []byte(fmt.Sprintf("%03d%s", i, strings.Repeat(".", 200)))}
		size := recordSize(r)
		gen, err := p.budget.acquire(ctx, int64(size))
		if err != nil {
			t.Fatal(err)
		}
		pp.append(r, start.UnixMilli(), size, gen, deliveryFunc(d.cb(i)))
	}
	pp.pump(start)
	if len(pp.inflight) != 1 || len(pp.queue) != n-1 {
		t.Fatalf("%d in flight, %d queued; want 1 and %d", len(pp.inflight), len(pp.queue), n-1)
	}
	pp.pump(start.Add(2 * time.Minute))
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.got) != n-1 || d.n[0] != 0 {
		t.Fatalf("failed %d batches (the one in flight %d times); want the %d queued ones and not the one in flight", len(d.got), d.n[0], n-1)
	}
	for i := 1; i < n; i++ {
		if !errors.Is(d.got[i].Err, ErrDeliveryTimeout) || d.n[i] != 1 {
			t.Fatalf("record %d: %d callbacks, err %v; want one ErrDeliveryTimeout", i, d.n[i], d.got[i].Err)
		}
	}
}

// A queued batch's delivery deadline is itself a wake-up: an idle partition
// whose only other wake-up is far off (a long retry backoff while the leader
// is unknown, or a long leader-check interval while a request hangs) still
// fails the queued batch when its deadline passes, not when that other
// wake-up comes. The test drives pump with its own clock and wakes the
// partition when nextWake (what run arms its timer with) says.
func TestQueuedBatchDeadlineArmsTimer(t *testing.T) {
	for _, tc := range []struct {
		name string
		hang bool // leader known, Produce hangs; else no leader
		cfg  ProducerConfig
		n    int // batches; with a hanging Produce the first is in flight
	}{
		{"no leader, long backoff", false,
			ProducerConfig{BatchBytes: 100, Linger: time.Hour, DeliveryTimeout: time.Minute, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour}, 1},
		{"request hangs, long leader check", true,
			ProducerConfig{BatchBytes: 100, Linger: time.Hour, DeliveryTimeout: time.Minute, MaxInFlight: 1, LeaderCheckInterval: time.Hour}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clienttest.New(1)
			fc.CreateTopic("t", 1)
			if tc.hang {
				fc.InterceptProduce(clienttest.Action{Kind: clienttest.Hang})
			} else {
				fc.SetLeader("t", 0, -1)
			}
			c := mustFakeClient(t, fc)
			p, err := c.NewProducer(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			ctx := testCtx(t)
			if _, err := c.PartitionCount(ctx, "t"); err != nil { // metadata in hand
				t.Fatal(err)
			}
			pp := newPartProducer(p, "t", 0) // driven by the test alone: no run goroutine
			defer pp.abort()
			d := newDeliveries()
			start := time.Now()
			for i := range tc.n {
				r := &Record{Topic: "t", Value: []byte(fmt.Sprintf("%03d%s", i, strings.Repeat(".", 200)))}
				size := recordSize(r)
				gen, err := p.budget.acquire(ctx, int64(size))
				if err != nil {
					t.Fatal(err)
				}
				pp.append(r, start.UnixMilli(), size, gen, deliveryFunc(d.cb(i))) // one batch each
			}
			deadline := time.Now().Add(tc.cfg.DeliveryTimeout)
			pp.pump(start)
			if len(pp.queue) != 1 || len(pp.inflight) != tc.n-1 {
				t.Fatalf("%d queued, %d in flight; want 1 and %d", len(pp.queue), len(pp.inflight), tc.n-1)
			}
			wake := pp.nextWake()
			if wake.IsZero() || wake.After(deadline) {
				t.Fatalf("next wake-up in %v, after the queued batch's deadline (in %v)", wake.Sub(start), deadline.Sub(start))
			}
			pp.pump(wake.Add(time.Millisecond))
			d.mu.Lock()
			defer d.mu.Unlock()
			last := tc.n - 1
			if d.n[last] != 1 || !errors.Is(d.got[last].Err, ErrDeliveryTimeout) {
				t.Fatalf("queued batch at the wake-up: %d callbacks, err %v; want one ErrDeliveryTimeout", d.n[last], d.got[last].Err)
			}
			if tc.hang && d.n[0] != 0 {
				t.Fatal("the batch in flight was expired")
			}
		})
	}
}

// Close gives up while a request is in flight: the leader has appended the
// batch and is still waiting (for the ISR) when the producer stops. The
// record is in the log, so its delivery must say it may have been written;
// a plain ErrProducerClosed tells the application it was not, and a payment
// application sends it again. The same holds for a batch whose first
// answer was lost and that waits, queued, for its resend.
func TestCloseReportsInFlightBatchAsPossiblyWritten(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer clienttest.Kind
	}{
		{"in flight", clienttest.HandleThenHang},
		{"queued after a lost answer", clienttest.DropResponse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := clienttest.New(1)
			fc.CreateTopic("t", 1)
			fc.InterceptProduce(clienttest.Action{Kind: tc.answer})
			c := mustFakeClient(t, fc)
			p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: time.Hour, RetryBackoffMax: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			ctx := testCtx(t)
			d := newDeliveries()
			if err := p.Produce(ctx, &Record{Topic: "t", Value: []byte("v0")}, d.cb(0)); err != nil {
				t.Fatal(err)
			}
			for fc.LogEnd("t", 0) < 1 { // written: a condition with the test's deadline
				if ctx.Err() != nil {
					t.Fatal("the batch was never written")
				}
				time.Sleep(time.Millisecond)
			}
			cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			if err := p.Close(cctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("close: %v", err)
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			var de *DeliveryError
			if got := d.got[0]; d.n[0] != 1 || !errors.Is(got.Err, ErrProducerClosed) || !errors.As(got.Err, &de) || !de.Unknown {
				t.Fatalf("written record failed by Close: %d callbacks, %v; want one ErrProducerClosed saying it may have been written", d.n[0], got.Err)
			}
		})
	}
}

// Close stops while an answer is already on its way: a request that
// succeeded is reported as the success it is, not as ErrProducerClosed.
func TestCloseDeliversAnswersAlreadyReceived(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := c.PartitionCount(ctx, "t"); err != nil { // metadata in hand: pump finds the leader
		t.Fatal(err)
	}
	p.flushing.Add(1)                // the open batch goes at once
	pp := newPartProducer(p, "t", 0) // driven by the test alone: no run goroutine
	d := newDeliveries()
	r := &Record{Topic: "t", Value: []byte("v0")}
	gen, err := p.budget.acquire(ctx, int64(recordSize(r)))
	if err != nil {
		t.Fatal(err)
	}
	pp.append(r, time.Now().UnixMilli(), recordSize(r), gen, deliveryFunc(d.cb(0)))
	pp.pump(time.Now())
	if len(pp.inflight) != 1 {
		t.Fatalf("%d in flight, want 1", len(pp.inflight))
	}
	for len(pp.results) == 0 { // the answer has arrived, not yet handled
		if ctx.Err() != nil {
			t.Fatal("no answer")
		}
		time.Sleep(time.Millisecond)
	}
	pp.abort() // what run does when Close stops it now
	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.got[0]; d.n[0] != 1 || got.Err != nil || got.Offset != 0 {
		t.Fatalf("acknowledged record: %d callbacks, %+v; want one success at offset 0", d.n[0], got)
	}
	p.flushing.Add(-1)
	p.Close(ctx)
}

// ProduceSync's context ends while the record is in flight (here the leader
// has appended it and waits): the record stays queued and may be written,
// so the error must say so, not look like a plain failure.
func TestProduceSyncGivenUpMayHaveBeenWritten(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.InterceptProduce(clienttest.Action{Kind: clienttest.HandleThenHang})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		p.Close(ctx) // the request hangs: abandon it
	}()
	sctx, cancel := context.WithTimeout(testCtx(t), 100*time.Millisecond)
	defer cancel()
	_, err = p.ProduceSync(sctx, &Record{Topic: "t", Value: []byte("v0")})
	var de *DeliveryError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &de) || !de.Unknown {
		t.Fatalf("ProduceSync gave up with %v; want a DeliveryError saying it may have been written", err)
	}
	if n := fc.LogEnd("t", 0); n != 1 {
		t.Fatalf("log end %d: the scenario wants the record written", n)
	}
}

// A request that stays outstanding (a leader waiting for a slow ISR) makes
// the partition check its leader once per half LeaderCheckInterval, not
// again at once: nextWake used to stay at the oldest request's send time
// plus the interval, already past, so the loop woke every millisecond (the
// timer's floor) for as long as the request was out. The test drives the
// partition with its own clock.
func TestSlowRequestDoesNotSpinTheLeaderCheck(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.InterceptProduce(clienttest.Action{Kind: clienttest.HandleThenHang})
	c := mustFakeClient(t, fc)
	const ivl = 100 * time.Millisecond
	p, err := c.NewProducer(ProducerConfig{Linger: time.Hour, LeaderCheckInterval: ivl})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx := testCtx(t)
	if _, err := c.PartitionCount(ctx, "t"); err != nil { // metadata in hand: pump finds the leader
		t.Fatal(err)
	}
	pp := newPartProducer(p, "t", 0) // driven by the test alone: no run goroutine
	defer pp.abort()
	r := &Record{Topic: "t", Value: []byte("v0")}
	gen, err := p.budget.acquire(ctx, int64(recordSize(r)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	pp.append(r, start.UnixMilli(), recordSize(r), gen, nil)
	p.flushing.Add(1) // the open batch goes at once
	pp.pump(start)
	p.flushing.Add(-1)
	if len(pp.inflight) != 1 {
		t.Fatalf("%d in flight, want 1", len(pp.inflight))
	}
	sent := pp.inflight[0].sentAt
	now := sent
	for i := 0; i < 5; i++ {
		wake := pp.nextWake()
		if !wake.After(now) {
			t.Fatalf("check %d: next wake-up %v after the last one, want a later one", i, wake.Sub(now))
		}
		if i == 0 && wake.Sub(sent) != ivl {
			t.Fatalf("first leader check %v after the send, want %v", wake.Sub(sent), ivl)
		}
		if i > 0 && wake.Sub(now) != ivl/2 {
			t.Fatalf("check %d: %v after the previous one, want %v", i, wake.Sub(now), ivl/2)
		}
		now = wake
		pp.checkLeaders(now, true) // what run does when the timer fires
	}
}

// A leader that answers DuplicateSequence without the batch's offsets says
// the batch is in the log: the failed delivery must not read as "not
// written" (DeliveryError.Unknown false), or the application sends the
// payment again.
func TestDuplicateWithoutOffsetsIsNotReportedAsNotWritten(t *testing.T) {
	fc := clienttest.New(1)
	fc.CreateTopic("t", 1)
	fc.InterceptProduce(clienttest.Action{Kind: clienttest.Refuse, Code: wire.DuplicateSequence})
	c := mustFakeClient(t, fc)
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	_, err = p.ProduceSync(testCtx(t), &Record{Topic: "t", Value: []byte("v0")})
	var de *DeliveryError
	if !errors.Is(err, ErrDuplicateNoOffset) || !errors.As(err, &de) || !de.Unknown {
		t.Fatalf("got %v; want ErrDuplicateNoOffset in a DeliveryError saying it may have been written", err)
	}
}

// A node cut off from the controller keeps answering Metadata quickly with
// its stale image (here: the partition's old leader). The client asked it
// first on every refresh (it had answered last, so it stayed preferred even
// when its answer was refused as older than the cache), refused its answer
// three times, then took it: the producer was stuck with the old leader
// until its records timed out. An older answer must count as no answer, so
// the refresh asks the next node.
func TestStaleMetadataNodeDoesNotStallTheProducer(t *testing.T) {
	fc := clienttest.New(3)
	fc.CreateTopic("t", 1)
	fc.SetLeader("t", 0, 1)
	c := mustFakeClient(t, fc) // asks fake-1 first
	p, err := c.NewProducer(ProducerConfig{Linger: time.Millisecond, RetryBackoff: 5 * time.Millisecond, RetryBackoffMax: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		p.Close(ctx) // without the fix the record waits out its delivery timeout
	}()
	ctx := testCtx(t)
	if _, err := p.ProduceSync(ctx, &Record{Topic: "t", Value: []byte("v0")}); err != nil {
		t.Fatal(err)
	}
	fc.FreezeMetadata(1) // node 1 is cut off from the controller...
	fc.SetLeader("t", 0, 2)
	fc.SetController(2) // ...which moves on without it
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	d, err := p.ProduceSync(sctx, &Record{Topic: "t", Value: []byte("v1")})
	if err != nil || d.Offset != 1 {
		t.Fatalf("record after the leader moved: %+v, %v; want it written at offset 1 by the new leader", d, err)
	}
	if pm, _ := c.meta.current().partition("t", 0); pm.Leader != 2 {
		t.Fatalf("cached metadata names leader %d, want 2", pm.Leader)
	}
}
