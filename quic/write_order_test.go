package quic

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// Calls chained with WriteAfter open their streams and write their
// requests in chain order, though their goroutines start in the opposite
// order and the earlier requests are the larger ones. (The server may
// still serve two of them the other way round: its goroutines race; a
// leader's reorder wait absorbs that.)
func TestWriteAfterWritesInOrder(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cli.Call(ctx, srv.Addr(), typeEcho, echoMsg{}, nil); err != nil { // the connection
		t.Fatal(err)
	}
	const n = 8
	ctxs := make([]context.Context, n)
	index := map[*writeTurn]int{}
	var prev <-chan struct{}
	for i := range n {
		ctxs[i], prev = WriteAfter(ctx, prev)
		index[turnOf(ctxs[i])] = i
	}
	var mu sync.Mutex
	var order []int
	turnWrittenHook = func(t *writeTurn) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, index[t])
	}
	defer func() { turnWrittenHook = nil }()
	errs := make(chan error, n)
	for i := n - 1; i >= 0; i-- {
		go func() {
			req := echoMsg{N: int64(i), Data: bytes.Repeat([]byte{byte(i)}, (n-i)*128<<10)}
			var resp echoMsg
			err := cli.Call(ctxs[i], srv.Addr(), typeEcho, req, &resp)
			if err == nil && (resp.N != req.N || !bytes.Equal(resp.Data, req.Data)) {
				err = errors.New("wrong answer")
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for i, got := range order {
		if got != i {
			t.Fatalf("the requests were written in the order %v", order)
		}
	}
}

// A Call that fails, or ends before writing, still lets the next one in
// the chain write; a turn's release is idempotent.
func TestWriteAfterReleasesOnFailure(t *testing.T) {
	cli := mustClient(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	first, written := WriteAfter(ctx, nil)
	second, _ := WriteAfter(context.Background(), written)
	cancel()
	if err := cli.Call(first, "127.0.0.1:1", typeEcho, echoMsg{}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled call: %v", err)
	}
	select {
	case <-written:
	default:
		t.Fatal("a call that ended without writing did not release the next one")
	}
	turn := turnOf(second)
	if err := turn.wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	turn.written()
	turn.written() // no panic: closed once
	var none *writeTurn
	if err := none.wait(ctx); err != nil {
		t.Fatal(err)
	}
	none.written()
	// A turn whose predecessor never writes waits until its own context ends.
	blocked, _ := WriteAfter(context.Background(), make(chan struct{}))
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer wcancel()
	if err := turnOf(blocked).wait(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait behind a turn that never writes: %v", err)
	}
}
