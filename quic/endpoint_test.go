package quic

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"
)

func TestCallEcho(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	for i := range 3 {
		req := echoMsg{N: int64(i), S: "hello", Data: bytes.Repeat([]byte{byte(i)}, 100_000*i)}
		var resp echoMsg
		if err := cli.Call(ctx, srv.Addr(), typeEcho, req, &resp); err != nil {
			t.Fatalf("Call %d: %v", i, err)
		}
		if resp.N != req.N || resp.S != req.S || !bytes.Equal(resp.Data, req.Data) {
			t.Fatalf("Call %d: got %+v", i, resp.N)
		}
	}
	if n := len(cli.pool.mu.conns); n != 1 {
		t.Fatalf("pool holds %d connections, want 1", n)
	}
}

func TestCallConcurrentSharesOneConnection(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Go(func() {
			var resp echoMsg
			if err := cli.Call(context.Background(), srv.Addr(), typeEcho, echoMsg{N: int64(i)}, &resp); err != nil {
				errs <- err
			} else if resp.N != int64(i) {
				errs <- fmt.Errorf("got %d want %d", resp.N, i)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	srv.mu.Lock()
	n := len(srv.mu.conns)
	srv.mu.Unlock()
	if n != 1 {
		t.Fatalf("server saw %d connections, want 1", n)
	}
}

func TestCallHandlerError(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	err := cli.Call(context.Background(), srv.Addr(), typeFail, nil, nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeHandler || re.Message != "handler says no" || re.Addr != srv.Addr() {
		t.Fatalf("got %v, want RemoteError from handler", err)
	}
}

func TestCallUnknownType(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	err := cli.Call(context.Background(), srv.Addr(), 99, nil, nil)
	if !errors.Is(err, ErrUnknownType) {
		t.Fatalf("got %v, want ErrUnknownType", err)
	}
	// The server keeps serving.
	if err := cli.Call(context.Background(), srv.Addr(), typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestCallContextCancelCancelsHandler(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := cli.Call(ctx, srv.Addr(), typeSlow, time.Minute, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want deadline exceeded", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("cancel took %s", time.Since(start))
	}
	// The handler sees its context canceled and returns: nothing stays in flight.
	waitFor(t, 5*time.Second, "handler to return", func() bool { return srv.active.count() == 0 })
}

func TestCallRaw(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	e := getEncoder()
	b, err := e.frame(typeEcho, echoMsg{N: 7, S: "raw"}, DefaultMaxFrameSize)
	if err != nil {
		t.Fatal(err)
	}
	body := append([]byte(nil), b[frameHeaderLen:]...)
	putEncoder(e)
	f, err := cli.CallRaw(context.Background(), srv.Addr(), typeEcho, body)
	if err != nil {
		t.Fatal(err)
	}
	var m echoMsg
	if err := f.Decode(&m); err != nil || m.N != 7 || m.S != "raw" {
		t.Fatalf("decode: %v %+v", err, m)
	}
}

func TestSessionEcho(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	s, err := cli.OpenSession(ctx, srv.Addr(), typeSession, echoMsg{N: -1})
	if err != nil {
		t.Fatal(err)
	}
	f, err := s.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var m echoMsg
	if err := f.Decode(&m); err != nil || m.N != -1 {
		t.Fatalf("first echo: %v %+v", err, m)
	}
	// Concurrent Send and Recv.
	const n = 200
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			if err := s.Send(ctx, 9, echoMsg{N: int64(i), Data: make([]byte, i*100)}); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i := range n {
		f, err := s.Recv(ctx)
		if err != nil {
			t.Fatalf("recv %d: %v", i, err)
		}
		if f.Type != 9 {
			t.Fatalf("type %d", f.Type)
		}
		var m echoMsg
		if err := f.Decode(&m); err != nil || m.N != int64(i) || len(m.Data) != i*100 {
			t.Fatalf("recv %d: %v %d", i, err, m.N)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	s.Close()
}

func TestSessionServerCloseGivesEOF(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	s, err := cli.OpenSession(ctx, srv.Addr(), typeSink, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := s.Send(ctx, 1, echoMsg{N: int64(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Send(ctx, 1, echoMsg{N: -1}); err != nil {
		t.Fatal(err)
	}
	f, err := s.Recv(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := f.Decode(&n); err != nil || n != 4 {
		t.Fatalf("count %d %v", n, err)
	}
	if _, err := s.Recv(ctx); err != io.EOF {
		t.Fatalf("after handler returned: %v, want io.EOF", err)
	}
	s.Close()
}

func TestSessionHandlerErrorReachesPeer(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	ctx := context.Background()
	s, err := cli.OpenSession(ctx, srv.Addr(), typeSink, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Send(ctx, 1, "not an echoMsg"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Recv(ctx)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != CodeMalformed {
		t.Fatalf("got %v, want RemoteError", err)
	}
}

func TestSessionRecvCancel(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	s, err := cli.OpenSession(context.Background(), srv.Addr(), typeSink, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	// The server's handler sees the stream aborted and returns.
	waitFor(t, 5*time.Second, "session handler to return", func() bool { return srv.active.count() == 0 })
}

func TestShutdownWaitsForInFlightUnary(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	errc := make(chan error, 1)
	go func() {
		var s string
		errc <- cli.Call(context.Background(), srv.Addr(), typeSlow, 300*time.Millisecond, &s)
	}()
	waitFor(t, 5*time.Second, "call in flight", func() bool { return srv.active.count() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("in-flight call failed: %v", err)
	}
	// New calls fail clearly.
	err := cli.Call(context.Background(), srv.Addr(), typeEcho, echoMsg{}, nil)
	if err == nil {
		t.Fatal("call after shutdown succeeded")
	}
}

func TestShutdownDeadlineClosesConnections(t *testing.T) {
	srv := mustServe(t, Config{})
	cli := mustClient(t, Config{})
	errc := make(chan error, 1)
	go func() {
		errc <- cli.Call(context.Background(), srv.Addr(), typeSlow, time.Minute, nil)
	}()
	waitFor(t, 5*time.Second, "call in flight", func() bool { return srv.active.count() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want deadline exceeded", err)
	}
	err := <-errc
	if err == nil {
		t.Fatal("call survived a hard shutdown")
	}
	t.Logf("caller saw: %v", err)
}
