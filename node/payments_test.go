package node_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"paymentlog/client"
)

// paymentWriter produces "payment-<i>" records to the topic payments and
// keeps each record's outcome.
type paymentWriter struct {
	t    *testing.T
	p    *client.Producer
	acks []ack
	wg   sync.WaitGroup
}

type ack struct {
	off int64
	err error
}

// startPayments waits for tc's three nodes, creates the topic payments
// (one partition, RF 3, min ISR 2) and returns a writer of 100 records whose
// first 50 are produced and acknowledged.
func startPayments(ctx context.Context, t *testing.T, tc *testCluster) *paymentWriter {
	t.Helper()
	tc.waitAlive(3)
	c := tc.client(ctx)
	createTopic(ctx, t, tc, c, client.TopicSpec{Name: "payments", Partitions: 1, ReplicationFactor: 3, MinISR: 2})
	w := newPaymentWriter(t, c, 100)
	w.produce(ctx, 0, 50)
	w.flush(ctx)
	return w
}

func newPaymentWriter(t *testing.T, c *client.Client, total int) *paymentWriter {
	t.Helper()
	p, err := c.NewProducer(client.ProducerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close(context.Background()) })
	return &paymentWriter{t: t, p: p, acks: make([]ack, total)}
}

// produce queues records from..to-1 without waiting for them.
func (w *paymentWriter) produce(ctx context.Context, from, to int) {
	w.t.Helper()
	if _, err := w.tryProduce(ctx, from, to); err != nil {
		w.t.Fatal(err)
	}
}

// tryProduce is produce returning the first record not queued and the
// error, for goroutines other than the test's.
func (w *paymentWriter) tryProduce(ctx context.Context, from, to int) (int, error) {
	for i := from; i < to; i++ {
		w.wg.Add(1)
		err := w.p.Produce(ctx, &client.Record{Topic: "payments", Value: []byte(fmt.Sprintf("payment-%d", i))}, func(d client.Delivery) {
			w.acks[i] = ack{d.Offset, d.Err}
			w.wg.Done()
		})
		if err != nil {
			w.wg.Done()
			return i, err
		}
	}
	return to, nil
}

// background produces from..to-1 in the background, 50 records at a time,
// each group flushed before the next; the returned stop ends it after the
// group under way and returns the first record not produced. An error
// fails the test (Errorf) and ends the writer.
func (w *paymentWriter) background(ctx context.Context, from, to int) (stop func() int) {
	quit := make(chan struct{})
	next := make(chan int)
	go func() {
		i := from
		defer func() { next <- i }()
		for i < to {
			select {
			case <-quit:
				return
			default:
			}
			n, err := w.tryProduce(ctx, i, min(i+50, to))
			i = n
			if err == nil {
				err = w.p.Flush(ctx)
			}
			if err != nil {
				w.t.Errorf("background writer at record %d: %v", i, err)
				return
			}
		}
	}()
	return func() int {
		close(quit)
		return <-next
	}
}

func (w *paymentWriter) flush(ctx context.Context) {
	w.t.Helper()
	if err := w.p.Flush(ctx); err != nil {
		w.t.Fatal(err)
	}
}

// acknowledged flushes, waits for every outcome and returns the record
// acknowledged at each offset. An unacknowledged record or an offset
// acknowledged twice fails the test.
func (w *paymentWriter) acknowledged(ctx context.Context) map[int64]string {
	w.t.Helper()
	w.flush(ctx)
	w.wg.Wait()
	byOffset := map[int64]string{}
	for i, a := range w.acks {
		if a.err != nil {
			w.t.Fatalf("record %d not acknowledged: %v", i, a.err)
		}
		if prev, dup := byOffset[a.off]; dup {
			w.t.Fatalf("offset %d acknowledged for %q and payment-%d", a.off, prev, i)
		}
		byOffset[a.off] = fmt.Sprintf("payment-%d", i)
	}
	return byOffset
}

// readBackPayments reads partition 0 of payments from offset 0 until it has
// seen as many records as byOffset holds, and checks that the offsets are
// contiguous and that every acknowledged record is at its offset.
func readBackPayments(ctx context.Context, t *testing.T, c *client.Client, byOffset map[int64]string) {
	t.Helper()
	cons := c.NewConsumer(client.ConsumerConfig{MaxWait: 100 * time.Millisecond})
	defer cons.Close()
	cons.Assign([]client.TopicPartition{{Topic: "payments", Partition: 0}}, 0)
	seen := map[int64]string{}
	for next := int64(0); len(seen) < len(byOffset); {
		msgs, err := cons.Poll(ctx)
		if err != nil {
			t.Fatalf("poll after %d records: %v", len(seen), err)
		}
		for _, m := range msgs {
			if m.Offset != next {
				t.Fatalf("consumer read offset %d, want %d", m.Offset, next)
			}
			next++
			seen[m.Offset] = string(m.Value)
		}
	}
	for off, v := range byOffset {
		if seen[off] != v {
			t.Fatalf("offset %d holds %q, acknowledged %q", off, seen[off], v)
		}
	}
}
