package quic

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// orderOf returns stream n's place in seq, as serveStream hands it to an
// ordered handler.
func orderOf(seq *streamSeq, n uint64) *StreamOrder { return &StreamOrder{seq: seq, n: n} }

// Handlers that reach a key in the opposite order of their streams act on
// it in stream order: each waits for the earlier streams that declared the
// key, and not for one that declared another.
func TestStreamOrderActsInAcceptOrder(t *testing.T) {
	seq := &streamSeq{}
	const n = 4
	orders := make([]*StreamOrder, n)
	for i := range orders {
		orders[i] = orderOf(seq, seq.accept())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Stream 1 acts on another key: it holds nothing for "k".
	orders[1].Declare([]any{"other"})
	var mu sync.Mutex
	var acted []int
	done := make(chan int, n)
	act := func(i int) {
		orders[i].Declare([]any{"k"})
		orders[i].Await(ctx, "k", time.Minute)
		mu.Lock()
		acted = append(acted, i)
		mu.Unlock()
		orders[i].Done("k")
		done <- i
	}
	// The last stream's handler comes first, then the one before it...
	for i, blocked := n-1, int32(0); i >= 2; i-- {
		go act(i)
		blocked++
		waitFor(t, 10*time.Second, "the handler to wait", func() bool { return seq.waiting.Load() == blocked })
	}
	act(0) // ...and the first stream's last.
	for range n - 1 {
		<-done
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []int{0, 2, 3}; len(acted) != len(want) || acted[0] != 0 || acted[1] != 2 || acted[2] != 3 {
		t.Fatalf("acted in the order %v, want %v", acted, want)
	}
	orders[1].Done("other")
	if seq.base != n {
		t.Fatalf("%d streams released of %d", seq.base, n)
	}
}

// A stream that releases its place (a fetch, say, once its type is known)
// holds no later stream, even while it lives on.
func TestStreamOrderReleasedStreamHoldsNothing(t *testing.T) {
	seq := &streamSeq{}
	fetch, produce := orderOf(seq, seq.accept()), orderOf(seq, seq.accept())
	fetch.Release()
	produce.Declare([]any{"k"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if waited, skipped := produce.Await(ctx, "k", time.Minute); waited || skipped {
		t.Fatalf("waited %v, skipped %v behind a released stream", waited, skipped)
	}
}

// An earlier stream whose request never arrives holds a later one for the
// bound only, and the ones after that not at all; one that declared the
// key holds it past the bound, until it is done (here: until the waiter's
// context ends).
func TestStreamOrderBound(t *testing.T) {
	seq := &streamSeq{}
	stuck, later, last := orderOf(seq, seq.accept()), orderOf(seq, seq.accept()), orderOf(seq, seq.accept())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const bound = 30 * time.Millisecond
	start := time.Now()
	waited, skipped := later.Await(ctx, "k", bound)
	if !waited || !skipped || time.Since(start) < bound || ctx.Err() != nil {
		t.Fatalf("behind a stream never declared: waited %v, skipped %v after %s (bound %s)", waited, skipped, time.Since(start), bound)
	}
	later.Release()
	// Passed over once, it holds no later stream.
	if waited, skipped := last.Await(ctx, "k", time.Minute); waited || !skipped {
		t.Fatalf("behind a stream passed over: waited %v, skipped %v", waited, skipped)
	}

	stuck.Declare([]any{"k"})
	short, cancelShort := context.WithTimeout(ctx, 10*bound)
	defer cancelShort()
	waited, skipped = later.Await(short, "k", bound)
	if !waited || skipped || short.Err() == nil {
		t.Fatalf("behind a stream holding the key: waited %v, skipped %v, returned before the context ended: %v", waited, skipped, short.Err() == nil)
	}
	stuck.Done("k")
	if waited, skipped := later.Await(ctx, "k", bound); waited || skipped {
		t.Fatalf("behind a stream done with the key: waited %v, skipped %v", waited, skipped)
	}
}

// typeOrdered is the ordered type orderedServer serves.
const typeOrdered FrameType = 70

// orderedServer starts a server (cfg) whose typeOrdered handler answers a
// request "early" at once, declaring nothing, and otherwise declares "k"
// and waits for the earlier streams of its connection that hold it:
// "held until the bound" when one was passed over after 5 s (a stream
// that did not release its place), else "". It returns the server and a
// client connected to it.
func orderedServer(t *testing.T, cfg Config) (srv, cli *Endpoint) {
	t.Helper()
	srv = mustServe(t, cfg)
	srv.HandleOrdered(typeOrdered, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		var what string
		if err := req.Decode(&what); err != nil {
			return 0, nil, err
		}
		o := StreamOrderOf(ctx)
		switch {
		case o == nil:
			return typeOrdered, "no order", nil
		case what == "early":
			return typeOrdered, "", nil
		}
		o.Declare([]any{"k"})
		// It may wait a moment for an earlier stream's first frame to
		// be read, not for that stream's handler.
		if _, skipped := o.Await(ctx, "k", 5*time.Second); skipped {
			return typeOrdered, "held until the bound", nil
		}
		return typeOrdered, "", nil
	})
	cli = mustClient(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{}, nil); err != nil { // the connection
		t.Fatal(err)
	}
	return srv, cli
}

// Over a connection: a stream whose type is not ordered (a long poll that
// lives on) releases its place as soon as its type is known, so the
// ordered request chained after it does not wait.
func TestStreamOrderUnorderedTypeReleasesAtOnce(t *testing.T) {
	srv, cli := orderedServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pollCtx, stopPoll := context.WithCancel(ctx)
	defer stopPoll()
	first, written := WriteAfter(pollCtx, nil)
	polled := make(chan error, 1)
	go func() { polled <- cli.Call(first, srv.Addr(), typeSlow, time.Minute, nil) }()
	second, _ := WriteAfter(ctx, written)
	var got string
	if err := cli.Call(second, srv.Addr(), typeOrdered, "", &got); err != nil {
		t.Fatal(err)
	}
	if got != "" {
		t.Fatalf("the ordered request behind a long poll: %q", got)
	}
	stopPoll()
	<-polled
}

// Over a connection: a stream refused before any handler runs (its first
// frame too large) and an ordered handler that returns without declaring
// anything (an early answer) each release their place, so an ordered
// request chained after them waits for neither.
func TestStreamOrderReleasedWithoutAHandlerOrByItsReturn(t *testing.T) {
	srv, cli := orderedServer(t, Config{MaxFrameSize: minMaxFrameSize})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first, written := WriteAfter(ctx, nil)
	if err := cli.Call(first, srv.Addr(), typeEcho, echoMsg{Data: make([]byte, 2*minMaxFrameSize)}, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("an oversized first frame: %v; want it refused as too large", err)
	}
	second, written := WriteAfter(ctx, written)
	if err := cli.Call(second, srv.Addr(), typeOrdered, "early", nil); err != nil {
		t.Fatal(err)
	}
	third, _ := WriteAfter(ctx, written)
	var got string
	if err := cli.Call(third, srv.Addr(), typeOrdered, "", &got); err != nil {
		t.Fatal(err)
	}
	if got != "" {
		t.Fatalf("the ordered request behind a refused stream and an early answer: %q", got)
	}
}

// What every stream pays: its place taken at accept and released once its
// type is known (no Await).
func BenchmarkStreamOrderAcceptRelease(b *testing.B) {
	seq := &streamSeq{}
	for b.Loop() {
		seq.release(seq.accept())
	}
}
