package quic

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"
)

// Test frame types.
const (
	typeEcho    FrameType = 1
	typeFail    FrameType = 2
	typeSession FrameType = 3
	typeSlow    FrameType = 4
	typeSink    FrameType = 5
)

type echoMsg struct {
	N    int64  `msgpack:"n"`
	S    string `msgpack:"s"`
	Data []byte `msgpack:"data"`
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// mustServe starts a serving endpoint on a random loopback port with the
// test handlers registered; it is shut down at test end.
func mustServe(tb testing.TB, cfg Config) *Endpoint {
	tb.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	registerTestHandlers(e)
	done := make(chan error, 1)
	go func() { done <- e.Serve(context.Background()) }()
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		e.Shutdown(ctx)
		select {
		case err := <-done:
			if !errors.Is(err, ErrServerClosed) {
				tb.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		case <-time.After(5 * time.Second):
			tb.Errorf("Serve did not return after Shutdown")
		}
	})
	return e
}

// mustClient creates a client-only endpoint closed at test end.
func mustClient(tb testing.TB, cfg Config) *Endpoint {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	e, err := New(context.Background(), cfg)
	if err != nil {
		tb.Fatalf("New client: %v", err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

func registerTestHandlers(e *Endpoint) {
	e.Handle(typeEcho, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		var m echoMsg
		if err := req.Decode(&m); err != nil {
			return 0, nil, err
		}
		return typeEcho, m, nil
	})
	e.Handle(typeFail, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		return 0, nil, errors.New("handler says no")
	})
	e.Handle(typeSlow, func(ctx context.Context, p Peer, req Frame) (FrameType, any, error) {
		var d time.Duration
		if err := req.Decode(&d); err != nil {
			return 0, nil, err
		}
		select {
		case <-time.After(d):
			return typeSlow, "done", nil
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		}
	})
	// Session: echoes every frame back until the peer closes.
	e.HandleSession(typeSession, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		var m echoMsg
		if err := first.Decode(&m); err != nil {
			return err
		}
		if err := s.Send(ctx, typeSession, m); err != nil {
			return err
		}
		for {
			f, err := s.Recv(ctx)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
			if err := s.Send(ctx, f.Type, Raw(f.Body)); err != nil {
				return err
			}
		}
	})
	// Sink session: reads frames and acknowledges the count at the end.
	e.HandleSession(typeSink, func(ctx context.Context, p Peer, first Frame, s *Session) error {
		var n int64
		for {
			f, err := s.Recv(ctx)
			if err == io.EOF {
				return s.Send(ctx, typeSink, n)
			}
			if err != nil {
				return err
			}
			var m echoMsg
			if err := f.Decode(&m); err != nil {
				return err
			}
			n++
			if m.N < 0 {
				return s.Send(ctx, typeSink, n)
			}
		}
	})
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
