package client

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
)

// testLogger logs to the test (shown on failure or with -v). Background
// goroutines (the QUIC endpoint's) may outlive the test: their logs are
// dropped once the test is cleaning up.
func testLogger(tb testing.TB) *slog.Logger {
	w := &tbWriter{tb: tb}
	tb.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tbWriter struct {
	tb   testing.TB
	mu   sync.Mutex
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.tb.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}

// mustFakeClient returns a client talking to fc in memory.
func mustFakeClient(tb testing.TB, fc *clienttest.Cluster) *Client {
	tb.Helper()
	c := newWithCaller(Config{Bootstrap: fc.Addrs(), HedgeDelay: 20 * time.Millisecond, Logger: testLogger(tb)}, fc)
	tb.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// refreshedFakeClient is mustFakeClient with its metadata already read.
func refreshedFakeClient(tb testing.TB, fc *clienttest.Cluster) *Client {
	tb.Helper()
	c := mustFakeClient(tb, fc)
	if err := c.meta.refresh(testCtx(tb)); err != nil {
		tb.Fatal(err)
	}
	return c
}

func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// deliveries collects delivery results by record index.
type deliveries struct {
	mu  sync.Mutex
	got map[int]Delivery
	n   map[int]int // callbacks per record (must be 1)
}

func newDeliveries() *deliveries { return &deliveries{got: map[int]Delivery{}, n: map[int]int{}} }

func (d *deliveries) cb(i int) func(Delivery) {
	return func(x Delivery) {
		d.mu.Lock()
		defer d.mu.Unlock()
		d.got[i] = x
		d.n[i]++
	}
}

// produceN produces n records "v<i>" (key "k<i%keys>" if keys > 0) and
// closes the producer.
func produceN(tb testing.TB, p *Producer, topic string, n, keys int) *deliveries {
	tb.Helper()
	ctx := testCtx(tb)
	d := newDeliveries()
	for i := 0; i < n; i++ {
		r := &Record{Topic: topic, Value: []byte(fmt.Sprintf("v%d", i))}
		if keys > 0 {
			r.Key = []byte(fmt.Sprintf("k%d", i%keys))
		}
		if err := p.Produce(ctx, r, d.cb(i)); err != nil {
			tb.Fatalf("produce %d: %v", i, err)
		}
	}
	if err := p.Close(ctx); err != nil {
		tb.Fatalf("close: %v", err)
	}
	return d
}

// checkExactlyOnce verifies every record was acknowledged exactly once, that
// the fake's logs hold each value exactly once at its acknowledged offset,
// and that within a partition records are in production order.
func checkExactlyOnce(tb testing.TB, fc *clienttest.Cluster, topic string, parts int, d *deliveries, n int) {
	tb.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	want := map[string]Delivery{}
	for i := 0; i < n; i++ {
		if d.n[i] != 1 {
			tb.Fatalf("record %d: %d callbacks", i, d.n[i])
		}
		x := d.got[i]
		if x.Err != nil {
			tb.Fatalf("record %d: %v", i, x.Err)
		}
		want[fmt.Sprintf("v%d", i)] = x
	}
	seen := 0
	for p := 0; p < parts; p++ {
		last := -1
		for j, s := range fc.Records(topic, int32(p)) {
			if s.Offset != int64(j) {
				tb.Fatalf("partition %d: record %d has offset %d (not contiguous)", p, j, s.Offset)
			}
			x, ok := want[string(s.Value)]
			if !ok {
				tb.Fatalf("partition %d offset %d: %q unexpected or duplicated", p, s.Offset, s.Value)
			}
			delete(want, string(s.Value))
			if x.Partition != int32(p) || x.Offset != s.Offset {
				tb.Fatalf("%q acknowledged at %d/%d, stored at %d/%d", s.Value, x.Partition, x.Offset, p, s.Offset)
			}
			var idx int
			fmt.Sscanf(string(s.Value), "v%d", &idx)
			if idx < last {
				tb.Fatalf("partition %d: v%d stored after v%d (order broken)", p, idx, last)
			}
			last = idx
			seen++
		}
	}
	if len(want) > 0 {
		tb.Fatalf("%d acknowledged records missing from the logs", len(want))
	}
	if seen != n {
		tb.Fatalf("logs hold %d records, want %d", seen, n)
	}
}
