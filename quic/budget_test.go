package quic

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// overlapProbe records how many decodes run at once. Each decode waits (up
// to a deadline) for another one to overlap it, then skips its value.
type overlapProbe struct{}

var probe struct {
	running, peak atomic.Int32
}

func (*overlapProbe) DecodeMsgpack(d *msgpack.Decoder) error {
	n := probe.running.Add(1)
	defer probe.running.Add(-1)
	for {
		if p := probe.peak.Load(); n <= p || probe.peak.CompareAndSwap(p, n) {
			break
		}
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	for probe.peak.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	return d.Skip()
}

// Decoding turns one byte per list element into a whole element (a struct
// of tens of bytes), up to MaxListItems per frame, and a peer may have
// thousands of frames decoding at once. Frames read by one endpoint share a
// budget of MaxListItems elements in decoding at once, so a peer cannot
// multiply the amplification by its number of streams.
func TestLargeDecodesShareOneItemBudget(t *testing.T) {
	const items = 600_000 // more than half of the budget: two cannot overlap
	body := append([]byte{0xdd, 0, 0, 0, 0}, repeatByte(0xc0, items)...)
	binary.BigEndian.PutUint32(body[1:], items)
	b := newDecodeBudget(1 << 20)
	probe.running.Store(0)
	probe.peak.Store(0)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			f := Frame{Type: 1, Body: body, maxItems: 1 << 20, budget: b}
			var v overlapProbe
			if err := f.Decode(&v); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if p := probe.peak.Load(); p != 1 {
		t.Fatalf("%d decodes of %d items each ran at once with a budget of %d items", p, items, 1<<20)
	}
	// Small frames do not wait for the budget.
	small := Frame{Type: 1, Body: []byte{0x92, 1, 2}, budget: b}
	taken := b.acquire(1 << 20)
	var xs []int
	if err := small.Decode(&xs); err != nil || len(xs) != 2 {
		t.Fatalf("small decode: %v %v", xs, err)
	}
	b.release(taken)
}

// Every frame an endpoint reads, served or answered, carries its budget.
func TestEndpointFramesCarryTheDecodeBudget(t *testing.T) {
	srv := mustServe(t, Config{})
	const typeBudget FrameType = 41
	srv.Handle(typeBudget, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		if req.budget != srv.decodeBudget || req.budget == nil {
			return 0, nil, errors.New("request frame without the endpoint's decode budget")
		}
		return typeBudget, nil, nil
	})
	cli := mustClient(t, Config{})
	if err := cli.Call(context.Background(), srv.Addr(), typeBudget, nil, nil); err != nil {
		t.Fatal(err)
	}
	f, err := cli.CallRaw(context.Background(), srv.Addr(), typeBudget, []byte{0xc0})
	if err != nil {
		t.Fatal(err)
	}
	if f.budget != cli.decodeBudget || f.budget == nil {
		t.Fatal("response frame without the endpoint's decode budget")
	}
}

// The budget is granted in arrival order: a decode of the whole budget
// waiting for the decodes in progress is not overtaken by later, smaller
// ones that would fit in what is free (a hostile peer can start those
// without end, and the large one would wait as long).
func TestDecodeBudgetIsFirstComeFirstServed(t *testing.T) {
	const capacity = 10_000
	b := newDecodeBudget(capacity)
	held := b.acquire(6_000) // a decode in progress
	var order []string
	var mu sync.Mutex
	got := func(name string) {
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
	}
	large, small := make(chan int, 1), make(chan int, 1)
	go func() {
		n := b.acquire(capacity)
		got("large")
		large <- n
	}()
	waitUntil(t, "the large decode to wait", func() bool { return b.queued() == 1 })
	go func() {
		n := b.acquire(4_000) // fits in what is free, but arrived later
		got("small")
		small <- n
	}()
	waitUntil(t, "the small decode to wait or go ahead", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return b.queued() == 2 || len(order) > 0
	})
	b.release(held)
	waitUntil(t, "a waiting decode to be granted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) > 0
	})
	mu.Lock()
	first := order[0]
	mu.Unlock()
	if first != "large" {
		t.Fatalf("the %s decode, which came second, was granted first", first)
	}
	b.release(recvInt(t, large, "the large decode"))
	b.release(recvInt(t, small, "the small decode"))
	if all := b.acquire(capacity); all != capacity {
		t.Fatalf("after every release acquire(%d) took %d", capacity, all)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func recvInt(t *testing.T, c <-chan int, what string) int {
	t.Helper()
	select {
	case n := <-c:
		return n
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return 0
	}
}
