package quic

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// startServer creates and serves an endpoint on addr without registering a
// cleanup; kill or shut it down explicitly.
func startServer(t *testing.T, addr string, cfg Config) (*Endpoint, chan error) {
	t.Helper()
	cfg.Addr = addr
	cfg.Logger = quietLogger()
	e, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	registerTestHandlers(e)
	done := make(chan error, 1)
	go func() { done <- e.Serve(context.Background()) }()
	return e, done
}

// kill drops the endpoint like a crashed process: no CONNECTION_CLOSE is
// sent, and its port is closed.
func kill(e *Endpoint) {
	silence(e)
	e.udp.Close()
}

func poolSize(e *Endpoint) int {
	e.pool.mu.Lock()
	defer e.pool.mu.Unlock()
	return len(e.pool.mu.conns)
}

func TestRestartedPeerResetsOldConnectionAtOnce(t *testing.T) {
	srv1, done1 := startServer(t, "127.0.0.1:0", Config{})
	addr := srv1.Addr()
	cli := mustClient(t, Config{IdleTimeout: 30 * time.Second})
	ctx := context.Background()
	if err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	kill(srv1)
	<-done1
	srv2, done2 := startServer(t, addr, Config{})
	defer func() { srv2.Close(); <-done2 }()

	// The old connection dies by stateless reset, long before any idle timeout.
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := cli.Call(cctx, addr, typeEcho, echoMsg{N: 2}, nil)
	if err != nil && !strings.Contains(err.Error(), "stateless reset") {
		t.Fatalf("call on the stale connection: %v, want a stateless reset", err)
	}
	if d := time.Since(start); d > 8*time.Second { // the idle timeout is 30 s
		t.Fatalf("stale connection noticed after %s", d)
	}
	t.Logf("first call after restart: %v (after %s)", err, time.Since(start))
	// The pool dropped it; the next call dials the new process.
	waitFor(t, 5*time.Second, "pool to drop the reset connection", func() bool {
		err := cli.Call(cctx, addr, typeEcho, echoMsg{N: 3}, nil)
		return err == nil
	})
}

// silence stops the endpoint like a paused process or a host cut off the
// network: nothing is answered, and its socket stays open, so its host
// refuses nothing either (a killed process's closed port is found sooner:
// TestCallToDeadPeerFailsOnItsClosedPort).
func silence(e *Endpoint) {
	e.mu.Lock()
	e.mu.closing = true
	e.mu.Unlock()
	e.hardCancel()
	e.tr.Close() // quic-go leaves a socket it was given open
}

func TestSilentPeerIdleTimeoutThenDialTimeout(t *testing.T) {
	srv, done := startServer(t, "127.0.0.1:0", Config{})
	addr := srv.Addr()
	cli := mustClient(t, Config{IdleTimeout: 400 * time.Millisecond, KeepAlivePeriod: 100 * time.Millisecond,
		HandshakeTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	if err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	silence(srv)
	<-done
	defer srv.udp.Close()
	err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 2}, nil)
	if err == nil || !strings.Contains(err.Error(), "idle timeout") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("got %v, want an idle timeout naming %s", err, addr)
	}
	waitFor(t, 5*time.Second, "pool to drop the dead connection", func() bool { return poolSize(cli) == 0 })
	start := time.Now()
	err = cli.Call(ctx, addr, typeEcho, echoMsg{N: 3}, nil)
	if err == nil || !strings.Contains(err.Error(), "dial timeout") {
		t.Fatalf("got %v, want a dial timeout", err)
	}
	var oe *OpError
	if !errors.As(err, &oe) || oe.Op != "dial" || oe.Addr != addr {
		t.Fatalf("got %#v, want an OpError for dial %s", err, addr)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("dial timeout took %s", d)
	}
}

func TestPeerShutdownDropsPooledConnection(t *testing.T) {
	srv1, done1 := startServer(t, "127.0.0.1:0", Config{})
	addr := srv1.Addr()
	cli := mustClient(t, Config{HandshakeTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	if err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 1}, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv1.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done1; !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve: %v", err)
	}
	waitFor(t, 5*time.Second, "pool to drop the closed connection", func() bool { return poolSize(cli) == 0 })
	err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 2}, nil)
	if err == nil {
		t.Fatal("call to a shut-down peer succeeded")
	}
	srv2, done2 := startServer(t, addr, Config{})
	defer func() { srv2.Close(); <-done2 }()
	if err := cli.Call(ctx, addr, typeEcho, echoMsg{N: 3}, nil); err != nil {
		t.Fatalf("call to the restarted peer: %v", err)
	}
}

func TestCallsAfterShutdownFailWithErrServerClosed(t *testing.T) {
	cli := mustClient(t, Config{})
	cli.Close()
	err := cli.Call(context.Background(), "127.0.0.1:1", typeEcho, nil, nil)
	if !errors.Is(err, ErrServerClosed) {
		t.Fatalf("got %v", err)
	}
	if err := cli.Shutdown(context.Background()); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

func TestServeContextCancelCloses(t *testing.T) {
	e, err := New(context.Background(), Config{Addr: "127.0.0.1:0", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Serve(ctx) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrServerClosed) {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context was canceled")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{MaxFrameSize: 10},
		{MaxListItems: -1},
		{IdleTimeout: -1},
		{FirstFrameTimeout: -time.Second},
	} {
		var ce *ConfigError
		if err := c.Validate(); !errors.As(err, &ce) {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestUDPBuffersRaised(t *testing.T) {
	e := mustClient(t, Config{})
	rcv, snd := setUDPBuffers(e.udp, udpBufferSize) // idempotent: reports what the socket has
	if os.Geteuid() != 0 {
		t.Logf("not root: rcvbuf %d KiB, sndbuf %d KiB", rcv>>10, snd>>10)
		return
	}
	if rcv < udpBufferSize || snd < udpBufferSize {
		t.Fatalf("as root the buffers should be forced to 7 MiB: rcvbuf %d, sndbuf %d", rcv, snd)
	}
}
