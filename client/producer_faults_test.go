package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"paymentlog/client/clienttest"
	"paymentlog/quic"
	"paymentlog/wire"
)

// TestProduceUnderRandomFaultsKeepsThePromise produces keyed records while
// every Produce request meets a random fault (lost request or answer,
// retriable refusals, NotLeader, Timeout or NotEnoughReplicasAfterAppend
// after the append, a terminal refusal, an answer that never comes, delays
// that reorder requests), the leaders move every few milliseconds
// (sometimes offline, half the time to a replica that lacks the
// unacknowledged tail), the configuration is drawn at random (acks all or
// 1, 1 to 5 requests in flight, small buffers, short delivery timeouts),
// and Close sometimes gives up early. Whatever happens,
// each record gets exactly one delivery, and it tells the truth: a success
// is in the log once at its offset, a failure not marked "may have been
// written" is not in the log at all, nothing is written twice, and each
// partition holds its records in production order. Then a consumer reads
// every partition back, exactly as stored, while the leaders keep moving.
//
// PAYMENTLOG_FAULT_SEEDS=n runs n seeds (default 3).
func TestProduceUnderRandomFaultsKeepsThePromise(t *testing.T) {
	seeds := 3
	if s := os.Getenv("PAYMENTLOG_FAULT_SEEDS"); s != "" {
		var err error
		if seeds, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { produceUnderRandomFaults(t, uint64(seed)) })
	}
}

func produceUnderRandomFaults(t *testing.T, seed uint64) {
	const parts, n = 2, 800
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 7))
	rnd := func(n int) int {
		rmu.Lock()
		defer rmu.Unlock()
		return rng.IntN(n)
	}
	fc := clienttest.New(3)
	fc.CreateTopic("t", parts)
	fc.SetIntercept(func(addr string, ty quic.FrameType, req any) clienttest.Action {
		if ty != wire.TypeProduce {
			return clienttest.Action{}
		}
		a := clienttest.Action{Delay: time.Duration(rnd(2000)) * time.Microsecond}
		switch x := rnd(100); {
		case x < 8:
			a.Kind = clienttest.DropRequest
		case x < 16:
			a.Kind = clienttest.DropResponse
		case x < 20:
			a.Kind, a.Code = clienttest.Refuse, wire.NotEnoughReplicas
		case x < 24:
			a.Kind, a.Code = clienttest.HandleThenRefuse, wire.NotLeader
		case x < 26:
			a.Kind, a.Code = clienttest.HandleThenRefuse, wire.Timeout
		case x < 27:
			a.Kind, a.Code = clienttest.HandleThenRefuse, wire.NotEnoughReplicasAfterAppend
		case x < 28:
			a.Kind, a.Code = clienttest.Refuse, wire.InvalidRequest
		case x < 29:
			a.Kind, a.Code = clienttest.Refuse, wire.CorruptMessage
		case x < 30:
			a.Kind = clienttest.HandleThenHang
		}
		return a
	})
	c := mustFakeClient(t, fc)
	cfg := ProducerConfig{
		Acks: Acks(rnd(2)), BatchBytes: 300, Linger: time.Millisecond, MaxInFlight: 1 + rnd(5),
		BufferBytes: int64(1000 + rnd(20000)), RequestTimeout: time.Duration(20+rnd(100)) * time.Millisecond,
		DeliveryTimeout: time.Duration(50+rnd(500)) * time.Millisecond,
		RetryBackoff:    time.Millisecond, RetryBackoffMax: 5 * time.Millisecond, LeaderCheckInterval: 5 * time.Millisecond,
	}
	t.Logf("config %+v", cfg)
	p, err := c.NewProducer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	stopMoving := moveLeadersAtRandom(fc, parts, rnd, true)
	ctx := testCtx(t)
	d := newDeliveries()
	for i := range n {
		if err := p.Produce(ctx, &Record{Topic: "t", Key: []byte(fmt.Sprint(i % 7)), Value: []byte(fmt.Sprintf("v%d", i))}, d.cb(i)); err != nil {
			t.Fatal(err)
		}
	}
	closeIn := 20 * time.Second
	if rnd(3) == 0 {
		closeIn = time.Duration(rnd(30)) * time.Millisecond // Close gives up on what is still pending
	}
	cctx, cancel := context.WithTimeout(ctx, closeIn)
	defer cancel()
	if err := p.Close(cctx); err != nil && closeIn > time.Second {
		t.Fatalf("close: %v", err)
	}
	stopMoving()
	// A request the closed producer gave up on may still be appending.
	if err := fc.WaitIdle(ctx); err != nil {
		t.Fatalf("fake cluster still handling requests: %v", err)
	}

	type place struct {
		part int32
		off  int64
	}
	stored := map[string][]place{}
	var logs [parts][]clienttest.Stored
	for part := range int32(parts) {
		logs[part] = fc.Records("t", part)
		last := -1
		for _, s := range logs[part] {
			stored[string(s.Value)] = append(stored[string(s.Value)], place{part, s.Offset})
			var idx int
			fmt.Sscanf(string(s.Value), "v%d", &idx)
			if idx < last {
				t.Errorf("partition %d: v%d stored after v%d (order broken)", part, idx, last)
			}
			last = idx
		}
	}
	d.mu.Lock()
	var ok, unknown, failed int
	for i := range n {
		v := fmt.Sprintf("v%d", i)
		if d.n[i] != 1 {
			t.Errorf("%s: %d deliveries, want 1", v, d.n[i])
			continue
		}
		x, at := d.got[i], stored[v]
		if len(at) > 1 {
			t.Errorf("%s stored %d times: %v", v, len(at), at)
		}
		var de *DeliveryError
		switch {
		case x.Err == nil:
			ok++
			if len(at) != 1 || at[0] != (place{x.Partition, x.Offset}) {
				t.Errorf("%s acknowledged at %d/%d, stored at %v", v, x.Partition, x.Offset, at)
			}
		case errors.As(x.Err, &de) && de.Unknown:
			unknown++
		default:
			failed++
			if len(at) > 0 {
				t.Errorf("%s failed as not written (%v) but is stored at %v", v, x.Err, at)
			}
		}
	}
	d.mu.Unlock()
	t.Logf("%d acknowledged, %d may have been written, %d failed", ok, unknown, failed)
	if t.Failed() {
		return
	}

	// Read back while the leaders keep moving (no more truncation: what is
	// stored now is what a consumer must see).
	stopMoving = moveLeadersAtRandom(fc, parts, rnd, false)
	defer stopMoving()
	cs := c.NewConsumer(ConsumerConfig{MaxWait: 20 * time.Millisecond, PartitionMaxBytes: 512, RetryBackoff: time.Millisecond, RetryBackoffMax: 5 * time.Millisecond})
	defer cs.Close()
	if _, err := cs.AssignTopic(ctx, "t", SeekBeginning); err != nil {
		t.Fatal(err)
	}
	var got [parts][]Message
	for done := false; !done; {
		msgs, err := cs.Poll(ctx)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		for _, m := range msgs {
			got[m.Partition] = append(got[m.Partition], m)
		}
		done = true
		for part := range parts {
			done = done && len(got[part]) >= len(logs[part])
		}
	}
	for part := range parts {
		if len(got[part]) != len(logs[part]) {
			t.Fatalf("partition %d: consumed %d records, stored %d", part, len(got[part]), len(logs[part]))
		}
		for i, m := range got[part] {
			if s := logs[part][i]; m.Offset != s.Offset || string(m.Value) != string(s.Value) {
				t.Fatalf("partition %d record %d: consumed %d %q, stored %d %q", part, i, m.Offset, m.Value, s.Offset, s.Value)
			}
		}
	}
}

// moveLeadersAtRandom moves a random partition's leadership every 5-25 ms
// (one move in six takes it offline; with truncate, half the moves go to a
// replica lacking the unacknowledged tail) until the returned stop is called.
func moveLeadersAtRandom(fc *clienttest.Cluster, parts int, rnd func(int) int, truncate bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(0)
		defer t.Stop()
		for {
			t.Reset(time.Duration(5+rnd(20)) * time.Millisecond)
			select {
			case <-done:
				return
			case <-t.C:
			}
			part := int32(rnd(parts))
			if truncate && rnd(2) == 0 {
				fc.TruncateUnacked("t", part)
			}
			ld := int32(1 + rnd(3))
			if rnd(6) == 0 {
				ld = -1
			}
			fc.SetLeader("t", part, ld)
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		for part := range int32(parts) { // leave every partition led
			if ld, _ := fc.Leader("t", part); ld < 0 {
				fc.SetLeader("t", part, 1)
			}
		}
	}
}
