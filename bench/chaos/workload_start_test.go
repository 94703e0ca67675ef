package chaos

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"paymentlog/client"
	"paymentlog/client/clienttest"
	"paymentlog/wire"
)

// gatedCtx runs gate in the nth call of its Err, and returns gate's error
// if not nil: client.New calls it once, on StartWorkload's goroutine
// (quic.New checks ctx first), so the gate holds StartWorkload between two
// clients it connects, or makes the second fail.
type gatedCtx struct {
	context.Context
	n     int32
	calls atomic.Int32
	gate  func() error
	gated atomic.Bool
}

func (c *gatedCtx) Err() error {
	if c.calls.Add(1) == c.n {
		c.gated.Store(true)
		if err := c.gate(); err != nil {
			return err
		}
	}
	return c.Context.Err()
}

// StartWorkload starts each consumer's goroutine before it connects the
// next consumer: nothing those goroutines share may be written without the
// lock once the first one runs. It used to make consumer i's map of read
// positions (w.mu.readPos[i], a write to w.mu.readPos) after consumer i-1
// was running, without w.mu, under which that consumer reads the same map
// for every record it reads: a data race, which -race reported in the CI
// run of the e2e chaos tests at 47e4673 where consumer 0 read records
// before StartWorkload had connected consumer 1.
//
// Here StartWorkload is held for a while when it connects consumer 1 (the
// third client: one producer's, consumer 0's, consumer 1's), long enough
// for consumer 0 to read the records already in the log. A pause, not a
// wait for the read: whatever the test goroutine learned the read through
// (a lock, an atomic, a channel, a read(2)) would order the read before the
// write, and the race detector would see no race. Even so, a run now and
// then orders them through something the goroutines share (a sync.Pool
// object, say) and shows nothing: the test runs three. Run with -race.
func TestStartWorkloadConsumersRace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc := servedCluster(ctx, t)
	prefill(ctx, t, fc.Addrs())
	shown := 0
	for range 3 {
		if readFirst(ctx, t, fc.Addrs(), 300*time.Millisecond) {
			shown++
		}
	}
	if shown == 0 {
		// Not a failure of StartWorkload: the machine was too slow for
		// the pause, and the runs showed nothing.
		t.Skip("consumer 0 never read before StartWorkload went on to connect consumer 1")
	}
}

// readFirst runs a workload of one producer and two consumers whose
// StartWorkload pauses for pause before it connects consumer 1, and reports
// whether consumer 0 read records before that pause was over.
func readFirst(ctx context.Context, t *testing.T, bootstrap []string, pause time.Duration) bool {
	t.Helper()
	var released time.Time
	gctx := &gatedCtx{Context: ctx, n: 3, gate: func() error {
		timer := time.NewTimer(pause)
		defer timer.Stop()
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		released = time.Now()
		return nil
	}}
	w, err := StartWorkload(gctx, WorkloadConfig{Bootstrap: bootstrap, Topic: Topic, Partitions: 1, Producers: 1,
		Consumers: 2, Members: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !gctx.gated.Load() {
		t.Fatal("StartWorkload never reached the gate: client.New no longer checks its ctx, and this test shows nothing")
	}
	if err := w.StopProducers(ctx); err != nil {
		t.Fatal(err)
	}
	w.StopConsumers()
	for _, r := range w.Reads() {
		if r.Consumer == 0 {
			return r.At.Before(released)
		}
	}
	t.Fatal("consumer 0 read nothing")
	return false
}

// A StartWorkload that fails part way stops the goroutines it started
// before it returns. When connecting a consumer failed, it used to stop the
// producers and close every client but leave the consumers already started
// polling their closed clients forever (and when connecting a producer
// failed, the producers too); and it left the producers open, each with the
// sender of a partition it had produced to running until the process
// ended. After producer 0 is made, the refusal waits for its first Produce
// request, so that its partition's sender runs.
func TestStartWorkloadFailingStopsGoroutines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fc := servedCluster(ctx, t)
	refused := errors.New("refused by the test")
	for n := int32(1); n <= 4; n++ { // producer 0's client, producer 1's, consumer 0's, consumer 1's
		produced := fc.Calls(wire.TypeProduce)
		gctx := &gatedCtx{Context: ctx, n: n, gate: func() error {
			for n > 1 && fc.Calls(wire.TypeProduce) == produced {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				time.Sleep(time.Millisecond) // a poll of the condition
			}
			return refused
		}}
		_, err := StartWorkload(gctx, WorkloadConfig{Bootstrap: fc.Addrs(), Topic: Topic, Partitions: 1, Producers: 2,
			Consumers: 2, Members: -1})
		if !errors.Is(err, refused) {
			t.Fatalf("client %d refused: StartWorkload returned %v", n, err)
		}
		// They have returned (a goroutine that has called Done may still
		// be on its way out): a few moments at most.
		deadline := time.NewTimer(5 * time.Second)
		tick := time.NewTicker(time.Millisecond)
		for f := workloadGoroutine(); f != ""; f = workloadGoroutine() {
			select {
			case <-deadline.C:
				t.Fatalf("client %d refused: a %s goroutine still runs 5s after StartWorkload failed", n, f)
			case <-tick.C:
			}
		}
		tick.Stop()
		deadline.Stop()
	}
}

// workloadGoroutine names a produce or consume goroutine, or a producer's
// partition sender, that runs; "" if none does.
func workloadGoroutine() string {
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, f := range []string{"chaos.(*Workload).produce", "chaos.(*Workload).consume", "client.(*partProducer).run"} {
		if strings.Contains(stacks, f) {
			return f
		}
	}
	return ""
}

// servedCluster is a fake 3-node cluster served over QUIC on 127.0.0.1,
// with Topic of one partition, closed when the test ends.
func servedCluster(ctx context.Context, t *testing.T) *clienttest.Cluster {
	t.Helper()
	fc := clienttest.New(3)
	fc.CreateTopic(Topic, 1)
	if err := fc.Serve(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fc.Close)
	return fc
}

// prefill writes a few records to partition 0 of Topic.
func prefill(ctx context.Context, t *testing.T, bootstrap []string) {
	t.Helper()
	c, err := client.New(ctx, client.Config{Bootstrap: bootstrap})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := p.ProduceSync(ctx, &client.Record{Topic: Topic, Partition: 0, PartitionSet: true, Value: []byte{byte(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
